# Topic `ising`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/ising.md. Check: `grade check ising` (re-check on save: `grade watch ising`).
# Stuck? `grade hint ising.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""The quantum Ising chain with NetKet: a Hamiltonian, its exact ground state, and a neural-network
ground state found by variational Monte Carlo.

The model. n spins 1/2 on a ring (site n is site 0 again: periodic boundary conditions) in a
transverse field:

    H = -J sum_i Z_i Z_{i+1}  -  h sum_i X_i          (J > 0, h >= 0)

Z_i and X_i are Pauli matrices acting on site i. The first term wants neighbours aligned along
z; the field h flips spins. For h < J the ground state is ordered (<Z_0 Z_r> stays finite at
large distance r), for h > J it is a paramagnet polarised along x, and h = J is a quantum
critical point, where the energy per site tends to -4/pi. The chain maps to free fermions, so
every number here has an exact value to compare with.

NetKet 3.23, the parts this topic uses:

    g  = nk.graph.Chain(length=n, pbc=True)           # the ring: edges (i, i+1 mod n)
    hi = nk.hilbert.Spin(s=1/2, N=n)                  # 2**n basis states; spins are +1 / -1
    nk.operator.Ising(hilbert=hi, graph=g, h=h, J=J)  # NetKet's convention: -h sum X + J sum ZZ
    nk.operator.spin.sigmax(hi, i), sigmaz(hi, i)     # one-site operators: combine with +, scalars, @
    H.to_sparse()                                     # a SciPy sparse matrix (small n only)
    nk.exact.lanczos_ed(H, k=1, compute_eigenvectors=False)
    nk.models.RBM, nk.sampler.MetropolisLocal, nk.vqs.MCState, nk.driver.VMC, nk.optimizer.SR

NetKet switches 64-bit floats on when it is imported; this topic's workers run with
`JAX_ENABLE_X64=1` from the start.

What changed since older NetKet code. The Hilbert space no longer takes a graph
(`nk.hilbert.Spin(s=0.5, graph=g)` is a TypeError: give `N=`), `nk.operator.Ising` needs the
graph, `nk.machine`, `nk.variational` and `nk.Vmc` are gone (models are Flax modules in
`nk.models`, the state is `nk.vqs.MCState`, the driver `nk.driver.VMC`), SR is passed as
`preconditioner=` (not `sr=`), `lanczos_ed` takes `k=` (not `first_n=`), and operators
multiply with `@` (`*` is deprecated).

Exercises 2 to 4 build on your `tfim_hamiltonian`.
"""

import jax
import netket as nk
import numpy as np
import optax
from netket.operator.spin import sigmax, sigmaz


def tfim_hamiltonian(n, h, J):
    """The Hamiltonian H = -J sum_i Z_i Z_{i+1} - h sum_i X_i of a ring of n spins, as a NetKet operator.

    `n` (an int, at least 3) is the number of sites; `h` and `J` are Python floats. Build the
    ring, `nk.graph.Chain(length=n, pbc=True)`, its Hilbert space, `nk.hilbert.Spin(s=1/2, N=n)`,
    and H on it, either as `nk.operator.Ising` (mind its sign convention: NetKet's J multiplies
    +Z_i Z_j, so a ferromagnet has a negative J there) or as a sum of
    `sigmaz(hi, i) @ sigmaz(hi, (i + 1) % n)` and `sigmax(hi, i)` terms. Return the operator.

    Example: for n = 4 and h = J = 1, `H.to_sparse().toarray()` is a 16 x 16 matrix; its first
    row (all spins up) is [-4, -1, -1, 0, -1, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0]: -J times the four
    aligned bonds on the diagonal, and -h to each state with one spin flipped.

    Graded (3 points):
      - correct (3): make your operator's matrix (`to_sparse().toarray()`, in NetKet's basis
        order) equal the reference's¹, called as written on 3 edge cases ("the docstring's
        example", "an odd ring", "no field (h = 0)"; graded on other inputs of each kind) and 3
        random cases.
      ¹ rtol 1e-12, atol 1e-12 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("tfim_hamiltonian: your code here")


def ground_state_energy(n, h, J):
    """The exact ground-state energy of the ring, by the Lanczos method.

    `n`, `h`, `J` as in `tfim_hamiltonian`. Return the lowest eigenvalue of H, a float64 scalar
    (a 0-d array or a Python float). Use `nk.exact.lanczos_ed(H)` (it returns an array of the k
    lowest eigenvalues, k = 1 by default): Lanczos needs only products of the sparse H with
    vectors, never the dense 2**n x 2**n matrix. At n = 12 the lesson measured 20 to 80 ms
    against 35 to 80 s for `np.linalg.eigvalsh` of the dense matrix (on a busy 2-core machine);
    at n = 14 the dense matrix alone takes 2.1 GB, and at n = 20 it would take 8.8 TB.

    Example: `ground_state_energy(4, 1.0, 1.0)` is -5.226251859505506 (to about 1e-15, float64
    rounding; the grader asks for 1e-9). With h = 0 the energy is
    -J·n (all spins aligned); on odd rings the sign of J matters (frustration).

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example", "an odd ring (frustrated if J has the wrong sign)", "no
        field: -J n"; graded on other inputs of each kind; 1 more hidden) and 3 random cases.
      - speed (2): be about as fast as the reference²: called as written, timed on `n` = 14.
      ¹ rtol 1e-9, atol 1e-9 for float outputs; integers, booleans and keys exactly. ² full
      points up to x3 the reference's time, none from x10, log-linear between (on a CPU the
      clock is CPU time, and a wall time past x10 scores 0 too).
    """
    raise NotImplementedError("ground_state_energy: your code here")


def vmc_ground_state(n, h, J, key):
    """A neural-network ground state: variational Monte Carlo with an RBM and stochastic reconfiguration.

    `n`, `h`, `J` as in `tfim_hamiltonian`; `key` is a typed JAX PRNG key. Find the ground state
    of your `tfim_hamiltonian(n, h, J)` among restricted Boltzmann machines, `nk.models.RBM(alpha=1)`,
    whose amplitude is log psi(s) = sum_i a_i s_i + sum_j log cosh(b_j + sum_i W_ij s_i):
      - split `key` into two keys (`jax.random.split`): one for the initial parameters, one for
        the sampler, so that every random choice comes from `key`;
      - `vstate = nk.vqs.MCState(nk.sampler.MetropolisLocal(hi), model, n_samples=..., seed=k1,
        sampler_seed=k2)`: Markov chains of single spin flips estimate the energy and its gradient;
      - `nk.driver.VMC(H, optax.sgd(learning_rate), variational_state=vstate,
        preconditioner=nk.optimizer.SR(diag_shift=...))`, then `.run(n_iter=..., out=None,
        show_progress=False)`. SR (the natural gradient) is what makes this converge quickly:
        plain gradient descent stalls near 1e-2 relative error after 100 steps.
    Return `vstate.parameters`, the RBM's parameters as NetKet stores them:
    {"Dense": {"kernel": W (n, alpha·n), "bias": b (alpha·n,)}, "visible_bias": a (n,)}.

    Keep it short: the grader times it, on rings it draws for each grading (see "Graded": a
    range of sizes and couplings, never the instance `grade check` uses), so tune nothing to
    one instance. Example: the reference uses 512 samples per step, a learning rate of 0.1,
    diag_shift 0.01 and 50 steps; at n = 14, h = J = 1 it reaches a relative error of about
    2e-4 in about 1 s of CPU time (its first call at a new size also compiles: about 6 s).

    Graded (6 points):
      - vmc (6): return an RBM whose energy is within a relative 1e-3 of the exact ground
        state's² on every run (half the points), then make the worse run about as fast as the
        reference's³ (the other half, only then): called as written, 2 runs on rings the grader
        draws¹; runs with different keys must not return identical parameters.
      ¹ n from {13, 14, 15}, J between 0.75 and 1, h/J between 0.8 and 1.2, a fresh `key` per
      run (the first run compiles); a public run, `grade check`, uses n = 12, h = 2, J = 1,
      which hidden grading never draws. ² computed exactly, over all 2**n configurations (at
      most alpha = 8 hidden units per spin); one run that misses is run again on a fresh key, as
      a right VMC can stall from an unlucky key. ³ full up to x2 the reference's time, none from
      x10, log-linear between (on a CPU the clock is CPU time, and a wall time past x10 gets no
      time points); a run past max(60 s, 20x the reference's) is stopped.
    """
    raise NotImplementedError("vmc_ground_state: your code here")


def correlations(n, h, J):
    """Observables of the exact ground state: the transverse magnetisation and the ZZ correlation function.

    `n`, `h`, `J` as in `tfim_hamiltonian`. Find the ground state |psi> of your
    `tfim_hamiltonian(n, h, J)` with `nk.exact.lanczos_ed(H, compute_eigenvectors=True)` (it
    returns the eigenvalues, shape (1,), and the normalised eigenvectors as columns, shape
    (2**n, 1)), and return the pair (mx, czz):
      - mx, a float64 scalar: the magnetisation along the field, <psi| (1/n) sum_i X_i |psi>;
      - czz, float64 of shape (n // 2 + 1,): czz[r] = <psi| Z_0 Z_r |psi> for r = 0 .. n // 2
        (czz[0] = 1; the ring is symmetric, so larger r repeat smaller ones).
    An expectation value is psi^dagger (O psi) with O's sparse matrix: `np.vdot(psi, O.to_sparse() @ psi)`,
    real here. Build O from `sigmax(hi, i)` and `sigmaz(hi, i)` (`hi = H.hilbert`), multiplying
    operators with `@`.

    Example: correlations(4, 1.0, 1.0) is (0.6532814824, [1.0, 0.6532814824, 0.6035533906]) (to
    ten digits). For h < J, czz stays large across the ring (order); for h > J it decays towards 0.

    Graded (3 points):
      - correct (3): make `mx` and `czz` equal the reference's¹, called as written on 3 edge
        cases ("the docstring's example", "no field: perfect order"; graded on other inputs of
        each kind; 1 more hidden) and 2 random cases.
      ¹ rtol 1e-7, atol 1e-7 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("correlations: your code here")
