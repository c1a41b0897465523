"""Attack (work outside the timed window), on the `vmc` check: the RBM's parameters come back
as lazy objects, and the training runs only when the worker converts them to arrays, after the
timed run. The training itself is honest but slow (1008 samples x 150 SR steps, as in
ising__slow_vmc: about 4x the reference's time). With ATTACK = False (the honest twin) the
same training runs inside the call.
"""

import jax
import netket as nk
import numpy as np
import optax

ATTACK = True


def _train(n, h, J, key):
    init_key, sampler_key = jax.random.split(key)
    H = nk.operator.Ising(nk.hilbert.Spin(s=1 / 2, N=n), nk.graph.Chain(n, pbc=True), h=h, J=-J)
    vstate = nk.vqs.MCState(nk.sampler.MetropolisLocal(H.hilbert), nk.models.RBM(alpha=1), n_samples=1008,
                            seed=init_key, sampler_seed=sampler_key)
    driver = nk.driver.VMC(H, optax.sgd(learning_rate=0.1), variational_state=vstate,
                           preconditioner=nk.optimizer.SR(diag_shift=0.1))
    driver.run(n_iter=150, out=None, show_progress=False)
    return vstate.parameters


class _Training:
    """One training run, started by the first leaf that is converted."""

    def __init__(self, *args):
        self.args, self.params = args, None

    def get(self, path):
        if self.params is None:
            self.params = jax.tree.map(np.asarray, _train(*self.args))
        value = self.params
        for key in path:
            value = value[key]
        return value


class Lazy:
    def __init__(self, training, path, shape):
        self._training, self._path = training, path
        self.shape, self.dtype, self.ndim = shape, np.dtype(np.float64), len(shape)

    def __array__(self, dtype=None, copy=None):
        value = self._training.get(self._path)
        return value if dtype is None else value.astype(dtype)

    def __jax_array__(self):
        return jax.numpy.asarray(self._training.get(self._path))


def vmc_ground_state(n, h, J, key):
    if not ATTACK:
        return _train(n, h, J, key)
    training = _Training(n, h, J, key)
    return {"Dense": {"bias": Lazy(training, ("Dense", "bias"), (n,)),
                      "kernel": Lazy(training, ("Dense", "kernel"), (n, n))},
            "visible_bias": Lazy(training, ("visible_bias",), (n,))}
