"""VMC with a common tutorial setting: right, but four times the reference's work."""

import jax
import netket as nk
import optax


def vmc_ground_state(n, h, J, key):
    """1008 samples and 150 SR steps (the reference: 512 and 50): as accurate as the reference,
    about 4x its time (loses time points)."""
    init_key, sampler_key = jax.random.split(key)
    H = nk.operator.Ising(nk.hilbert.Spin(s=1 / 2, N=n), nk.graph.Chain(n, pbc=True), h=h, J=-J)
    vstate = nk.vqs.MCState(nk.sampler.MetropolisLocal(H.hilbert), nk.models.RBM(alpha=1), n_samples=1008,
                            seed=init_key, sampler_seed=sampler_key)
    driver = nk.driver.VMC(H, optax.sgd(learning_rate=0.1), variational_state=vstate,
                           preconditioner=nk.optimizer.SR(diag_shift=0.1))
    driver.run(n_iter=150, out=None, show_progress=False)
    return vstate.parameters
