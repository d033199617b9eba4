# ruff: noqa  (vendored verbatim: its style is the original's)
# Vendored TF1 program, run by tests/test_compat_v1_tf1_programs.py against TensorFlow's numbers
# (tests/programs/fixtures/, made by tools/tf1_reference.py).
# Source: nlintz/TensorFlow-Tutorials, 01_linear_regression.py
#   (commit 379053100f2a2eaf1e44877ee96eecb3f1769b81), https://github.com/nlintz/TensorFlow-Tutorials
# Licence: the repository states none (no LICENSE file); vendored unchanged but for the import,
#   with this note of its source.
# Changed: only the import line (`import tensorflow as tf` -> `import dongjing.compat.v1 as tf`).
# The test seeds NumPy (the program's data noise) and lowers the epochs (a substitution).
#!/usr/bin/env python

import dongjing.compat.v1 as tf
import numpy as np

trX = np.linspace(-1, 1, 101)
trY = 2 * trX + np.random.randn(*trX.shape) * 0.33 # create a y value which is approximately linear but with some random noise

X = tf.placeholder("float") # create symbolic variables
Y = tf.placeholder("float")


def model(X, w):
    return tf.multiply(X, w) # lr is just X*w so this model line is pretty simple


w = tf.Variable(0.0, name="weights") # create a shared variable (like theano.shared) for the weight matrix
y_model = model(X, w)

cost = tf.square(Y - y_model) # use square error for cost function

train_op = tf.train.GradientDescentOptimizer(0.01).minimize(cost) # construct an optimizer to minimize cost and fit line to my data

# Launch the graph in a session
with tf.Session() as sess:
    # you need to initialize variables (in this case just variable W)
    tf.global_variables_initializer().run()

    for i in range(100):
        for (x, y) in zip(trX, trY):
            sess.run(train_op, feed_dict={X: x, Y: y})

    print(sess.run(w))  # It should be something around 2
