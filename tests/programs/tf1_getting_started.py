# ruff: noqa  (vendored verbatim: its style is the original's)
# Vendored TF1 tutorial, run by tests/test_compat_v1_programs.py.
# Source: the TensorFlow 1.x guide "Getting Started With TensorFlow" (get_started.md,
#   "Complete program" of the tf.train API section), https://www.tensorflow.org (r1.x docs).
# Licence: Apache-2.0, Copyright The TensorFlow Authors. Code samples in the TensorFlow docs
#   are licensed under the Apache 2.0 License.
# Changed: only the line `import tensorflow as tf` (now `import dongjing.compat.v1 as tf`) and
# this header. The guide prints: W: [-0.9999969] b: [ 0.99999082] loss: 5.69997e-11
import dongjing.compat.v1 as tf

# Model parameters
W = tf.Variable([.3], dtype=tf.float32)
b = tf.Variable([-.3], dtype=tf.float32)
# Model input and output
x = tf.placeholder(tf.float32)
linear_model = W*x + b
y = tf.placeholder(tf.float32)

# loss
loss = tf.reduce_sum(tf.square(linear_model - y)) # sum of the squares
# optimizer
optimizer = tf.train.GradientDescentOptimizer(0.01)
train = optimizer.minimize(loss)

# training data
x_train = [1, 2, 3, 4]
y_train = [0, -1, -2, -3]
# training loop
init = tf.global_variables_initializer()
sess = tf.Session()
sess.run(init) # reset values to wrong
for i in range(1000):
  sess.run(train, {x: x_train, y: y_train})

# evaluate training accuracy
curr_W, curr_b, curr_loss = sess.run([W, b, loss], {x: x_train, y: y_train})
print("W: %s b: %s loss: %s"%(curr_W, curr_b, curr_loss))
