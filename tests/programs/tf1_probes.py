"""The probes of TF 1.x's state semantics (issue 32's four silent differences, and more), each
a function of a `tf` module returning plain numbers: tools/tf1_reference.py records what
TensorFlow answers, tests/test_compat_v1_state.py checks that dongjing answers the same."""

from __future__ import annotations

import numpy as np


def two_sessions(tf):
    """(a) cs20si's example: each Session has its own copy of a variable."""
    w = tf.Variable(10)
    sess1, sess2 = tf.Session(), tf.Session()
    sess1.run(w.initializer)
    sess2.run(w.initializer)
    out = [sess1.run(w.assign_add(10)), sess2.run(w.assign_sub(2)),
           sess1.run(w.assign_add(100)), sess2.run(w.assign_sub(50))]
    sess1.close()
    sess2.close()
    return [int(v) for v in out]


def optimizer_state_per_session(tf):
    """(b) Adam's slots are variables: a second Session (and a re-run initializer) starts the
    same training over; the largest difference between the runs' trajectories."""
    x = tf.constant(np.linspace(-1, 1, 8, dtype=np.float32))
    w = tf.Variable(0.5)
    loss = tf.reduce_mean(tf.square(w * x - 2.0 * x))
    step = tf.train.AdamOptimizer(0.1).minimize(loss)

    def train(sess):
        sess.run(tf.global_variables_initializer())
        out = []
        for _ in range(5):
            sess.run(step)
            out.append(float(sess.run(w)))
        return out

    with tf.Session() as sess:
        first, again = train(sess), train(sess)
    with tf.Session() as sess:
        second = train(sess)
    return {"first": first, "reinitialized_diff": float(np.max(np.abs(np.subtract(first, again)))),
            "new_session_diff": float(np.max(np.abs(np.subtract(first, second))))}


def variable_from_variable(tf):
    """(c) tf.Variable(W * 2) starts from twice W's initialized value; initialized_value()."""
    w = tf.Variable(tf.truncated_normal([70, 10]))
    u = tf.Variable(w * 2)
    v = tf.Variable(w.initialized_value() * 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, uv, vv = sess.run([w, u, v])
    return {"u_minus_2w": float(np.max(np.abs(uv - 2 * wv))),
            "v_minus_3w": float(np.max(np.abs(vv - 3 * wv)))}


def seeds(tf):
    """(d) TF 1.x's seeds: which draws repeat (True) across runs, Sessions, orders."""
    tf.set_random_seed(1234)
    a = tf.random_uniform([3])
    b = tf.random_normal([3], seed=7)
    with tf.Session() as sess:
        a1, a2, b1 = sess.run(a), sess.run(a), sess.run(b)
    with tf.Session() as sess:
        b2, a3 = sess.run(b), sess.run(a)  # the other order
    same = lambda p, q: bool(np.array_equal(p, q))  # noqa: E731
    out = {"graph_seed_repeats_in_run": same(a1, a2), "graph_seed_new_session": same(a1, a3),
           "op_seed_new_session": same(b1, b2)}
    tf.reset_default_graph()
    c = tf.random_normal([3], seed=7)
    d = tf.random_normal([3], seed=7)
    with tf.Session() as sess:
        out["same_op_seed_same_values"] = same(*sess.run([c, d]))
    return out


def assign_fetch(tf):
    """Fetching an assign op gives the value assigned."""
    w = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(w.initializer)
        out = [sess.run(w.assign([3.0, 4.0])).tolist(), sess.run(tf.assign_add(w, [1.0, 1.0])).tolist(),
               sess.run(w.assign_sub([0.5, 0.5])).tolist()]
    return out


def uninitialized_read(tf):
    """A new Session has not initialized anything: reading raises FailedPreconditionError."""
    w = tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(w.initializer)
    with tf.Session() as sess:
        try:
            sess.run(w)
        except tf.errors.FailedPreconditionError:
            return "FailedPreconditionError"
    return "no error"


def scopes(tf):
    """Names of variables made through variable_scope / get_variable / name_scope."""
    with tf.variable_scope("layer1"):
        a = tf.get_variable("w", [2, 3])
        b = tf.Variable(1.0, name="b")
    with tf.variable_scope("layer1", reuse=True):
        a2 = tf.get_variable("w")
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        c1 = tf.get_variable("c", [1])
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        c2 = tf.get_variable("c", [1])
    with tf.name_scope("ns"):
        d = tf.Variable(0.0, name="d")
        e = tf.get_variable("e", [1])
    with tf.variable_scope(None, default_name="dense"):
        f = tf.get_variable("kernel", [1])
    with tf.variable_scope(None, default_name="dense"):
        g = tf.get_variable("kernel", [1])
    errors = []
    for scope, reuse, name in (("layer1", None, "w"), ("nothing", True, "z")):
        try:
            with tf.variable_scope(scope, reuse=reuse):
                tf.get_variable(name, [2, 3])
        except ValueError as exc:
            errors.append(str(exc).split(".")[0])
    return {"names": [v.name for v in (a, b, d, e, f, g, c1)], "shared": [a2 is a, c1 is c2],
            "errors": errors,
            "collections": [v.name for v in tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES,
                                                               scope="layer1")]}


def initializers(tf):
    """Statistics of TF's initializers (mean, std, min, max) on a large variable."""
    shape = [400, 300]
    inits = {
        "glorot_uniform": tf.glorot_uniform_initializer(seed=1),
        "glorot_normal": tf.glorot_normal_initializer(seed=1),
        "variance_scaling": tf.variance_scaling_initializer(2.0, seed=1),
        "variance_scaling_uniform_avg": tf.variance_scaling_initializer(
            1.0, "fan_avg", "uniform", seed=1),
        "truncated_normal": tf.truncated_normal_initializer(0.5, 0.2, seed=1),
        "random_normal": tf.random_normal_initializer(0.0, 0.3, seed=1),
        "random_uniform": tf.random_uniform_initializer(-0.2, 0.6, seed=1),
        "constant": tf.constant_initializer(0.25),
        "zeros": tf.zeros_initializer(),
        "ones": tf.ones_initializer(),
    }
    variables = {k: tf.get_variable(k, shape, initializer=i) for k, i in inits.items()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(variables)
    return {k: [float(v.mean()), float(v.std()), float(v.min()), float(v.max())]
            for k, v in values.items()}


OPTIMIZERS = {
    "sgd": lambda tf: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda tf: tf.train.AdamOptimizer(0.05),
    "adam_eps": lambda tf: tf.train.AdamOptimizer(0.05, 0.8, 0.9, epsilon=0.1),
    "rmsprop": lambda tf: tf.train.RMSPropOptimizer(0.01),
    "rmsprop_momentum_centered": lambda tf: tf.train.RMSPropOptimizer(
        0.01, decay=0.8, momentum=0.5, epsilon=1e-6, centered=True),
    "adagrad": lambda tf: tf.train.AdagradOptimizer(0.1),
    "adadelta": lambda tf: tf.train.AdadeltaOptimizer(1.0, rho=0.9),
    "ftrl": lambda tf: tf.train.FtrlOptimizer(0.1),
    "ftrl_l1_l2_shrinkage": lambda tf: tf.train.FtrlOptimizer(
        0.1, learning_rate_power=-0.7, l1_regularization_strength=0.01,
        l2_regularization_strength=0.02, l2_shrinkage_regularization_strength=0.03),
}


def optimizer_trajectory(tf, which: str, steps: int = 12):
    """A small least-squares fit from fixed values: the loss and the weights after each step
    (with an exponentially decayed learning rate and the global step for "sgd")."""
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((16, 3)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(np.full((3, 1), 0.1, np.float32))
    b = tf.Variable(np.zeros((1,), np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    step_var = tf.train.get_or_create_global_step()
    opt = OPTIMIZERS[which](tf)
    if which == "sgd":
        opt = tf.train.GradientDescentOptimizer(
            tf.train.exponential_decay(0.1, step_var, 4, 0.5, staircase=True))
    train = opt.minimize(loss, global_step=step_var)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            _, value = sess.run([train, loss], {x: xs, y: ys})
            out.append([float(value)] + sess.run(w).ravel().tolist() + sess.run(b).tolist())
        out.append([float(sess.run(step_var))])
    return out


def decays(tf):
    """TF's learning-rate schedules at steps 0..11."""
    step = tf.placeholder(tf.int64, [])
    schedules = {
        "exponential": tf.train.exponential_decay(0.5, step, 3, 0.7),
        "exponential_staircase": tf.train.exponential_decay(0.5, step, 3, 0.7, staircase=True),
        "natural_exp": tf.train.natural_exp_decay(0.5, step, 3, 0.7),
        "inverse_time": tf.train.inverse_time_decay(0.5, step, 3, 0.7, staircase=True),
        "polynomial": tf.train.polynomial_decay(0.5, step, 8, 0.05, power=2.0),
        "polynomial_cycle": tf.train.polynomial_decay(0.5, step, 4, 0.05, cycle=True),
        "cosine": tf.train.cosine_decay(0.5, step, 8, alpha=0.1),
        "piecewise": tf.train.piecewise_constant(step, [2, 5], [1.0, 0.5, 0.1]),
    }
    with tf.Session() as sess:
        return {k: [float(sess.run(v, {step: i})) for i in range(12)]
                for k, v in schedules.items()}


def clipping(tf):
    """clip_by_global_norm and clip_by_norm."""
    a = tf.constant([[3.0, 4.0]])
    b = tf.constant([12.0])
    (ca, cb), norm = tf.clip_by_global_norm([a, b], 6.5)
    (ua, ub), _ = tf.clip_by_global_norm([a, b], 100.0)
    n = tf.clip_by_norm(tf.constant([3.0, 4.0]), 2.0)
    with tf.Session() as sess:
        values = sess.run([ca, cb, norm, ua, ub, n])
    return [np.asarray(v).ravel().tolist() for v in values]


PROBES = {"two_sessions": two_sessions, "optimizer_state_per_session": optimizer_state_per_session,
          "variable_from_variable": variable_from_variable, "seeds": seeds,
          "assign_fetch": assign_fetch, "uninitialized_read": uninitialized_read,
          "scopes": scopes, "initializers": initializers, "decays": decays,
          "clipping": clipping}
