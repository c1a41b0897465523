"""Attack (a hidden instance answered by public data), on the `vmc` check: `vmc_ground_state`
runs no VMC. It returns the RBM parameters the public expectations ship (the reference's, for
the public run's instance), embedded here as they were recorded before the family (n = 16,
h = J = 1, the instance hidden grading then always used) and also read from the package at run
time. Before: full accuracy marks and full time marks. With ATTACK = False (the honest twin)
it trains as the reference does. The rest is the reference.
"""

import base64
import zlib

import jax
import jax.numpy as jnp
import netket as nk
import numpy as np
import optax
from netket.operator.spin import sigmax, sigmaz

ATTACK = True

RECORDED = (
    "eNoNl/c/FQ4Xx5VElKg8SaEkEtkpfeNokVFkVCgrm+xZkb3JuPa6Nte81x459qzsmSJRtoaV1uMfOD+c1/tzPu/DL32NeGbXWeia"
    "qXDh3+sEi5MhfzdrH0PUZExTXIklvHwUsEto3BR8IlWlaPusgWeotkPN0QVTHM0cTj13gH35mQ9GXJ9B6P2lUPvDvlBr0D7qHG0J"
    "FKGRRjcHPfhqHCbKw+ACXxbYW5gGXkCnL4+0P6M5GOl7Xd2MDIbCZCujUY8I1BZ9FbSLJRAZZJVXfy1FgoDuC/BkjYHY7VWvJOkw"
    "DP03t33tUxAk9N9N+T7jhV9dHmxmtvjDpTstVzY73eD57aBb7unh4P3ZV4Hb2A+pTxjROKlcBXGtd9fsQAySRpSV1+sikOe8hufV"
    "k+GQZ5tv3/w6FOlF69ij7jSC+ZP5seeqJDA4YDxNlZWPE7pCTzOrs4BXT1ZIS9YJa/6uTwlrxECyx3rixMoASAfGSRQeKwA8XB1Q"
    "2xODeXd4NWQjSzFsVUUs8ksIeGZuMQtSz0KCQWsdJ2M6dHy0FV20TAWqc6ElGr+a8KJTn1OEaBoMBV4WNxBPQ2qZCzoaqwmYda8/"
    "USrbBX9SWXxTNyahYM9SRGFGHHp+dNF9fzsQ97nftZVabQRqcjd33wUfPOFec/7Fg0zUdbVKdfAqRVWiUkFlVQUYtDKkT0YNwozo"
    "0plfxs5wc4FEkHfMwGPXxjJu7xtEwbu3FPl6yLjBrDTvztuIbibFxs/mvHBhqrKaIq4NR7YcK1bjX8JQ1fvHK88isHXf0f54qTJo"
    "YPFSuEEpgEPiM6R7TJ7YJ8y9/7dZNi7/HNI8K9CG73wDOoMMvSBGx7zyZTcZP2WRqdvKCRAfxypyX6UZ/cSY50Nil1Hc07OJLEdG"
    "2iwhOab7RehfNEyZzngOVnKEcGH1cCzwPRmpJ10KY+6na7ItfYFqlu2p0DwZ355py2o/QIDHHiIW87oq4C7ifPX+TDwun/q8IMo+"
    "ioMK98lPNpMxa9C9auN0GLbEJSWuxsfDfzaUhz86c/GcZdm+A/m96BI6T6RxSQbXoXPFTeIOOJ4h7+er6ID6bD3H9evD8MzpsgMj"
    "jn2gWJikpC4XD2wUa/6+v/N4PqXKI+tOHChwirZQsdXD4l7u0wt2JRgeF+j938YU5mQXNDDa5EJIUF1D/MVM/Gov6VZbngOBq7OW"
    "GWqa4N7yfOOEfRayO+xNnbqcg3Tzt3TvUeyhqfqnwbZ6LFxfHrnsreaLzIEfx9PIkbh2PUR1n1Mqfo3ZaH6m/gaLN7f3n9qTDAdi"
    "+6/fde2Dra6fpfoBDSg/ueRMKGjGRoe83113IoDtpKDV4MMANBo0lttiCwNhR+2uzmlHnHQvctL8HYvrfUryJpmhuN1aZ1PE9wzu"
    "qr1i32tRDT4dU7+I2pE4IdgpvqbUh/bWSwa0dhUY4tdsmbMeCw9OKayedI2BXEUZFvXfSzC88elCf8kbpOV7fIqpohGPsFu77r2t"
    "j3Q019XU2Ul4vn5t90cvLxih1ezcTbTAjsO9wUb8lniPRdXKQDkbfSW5lIikArxMMK8+Tx8FGpRxqTXrJDAx9Z/01KFAUJDh/KOW"
    "Jqh/Vyk9E1wOi7pMZ0b9gqFy+uCnPFIfUJ8vNSUKDKDVMn9UiVQxHreUvd/JlgUJvmQJq/JQlKItkxsfbIRgbZP2VOcGuGV24Ne/"
    "8/og0l1y4y7vqx1ulxpVcpPxWlXpIRqqWJQ0EVk35CxCA39ul06lcIzzcDQNHJ4BK3dT44/cBfBSsfgYR2MAqLNsuR62IEKPL4eP"
    "dNQ4Zuca0n59k4B/TxIuKOtEg23EUYX4/xxQMr/Zbe9EF5juSn5DPdQOEhpiKYpSaVjD9Y9+JYeMlPRDsdFQD7/Cyryc05uQdORD"
    "V8YnEm6sd5xrL2zHwlJbp1sjPRCpa/HBCzPQ+o8J6/fKINDsqM698zsDVU6MKRTsbUFeVjuXU4cz0Tb1CZ/d/Xg4sXD862yBKire"
    "pDWzlByG7pG79B6iJIwz8iiU4A5DmcvvhJcOk+FhbgTHmHk37LMhz9rmjOKvr/3Jhoa9WNH91ShlhYiRhGCCh0wmch05bn50IAZq"
    "WG3c/zilAJ98D8mYNxe4hG91lloXIkdOf63kbCguqxi+LLhQBiYnLutm6mQjvUcj3xXKJFyo9U3+I9OJhx9cqwnbd29n/he5k/a5"
    "oHlE+5t4ZTpcmk+StmmtxcC5nx671j5j3Gpv1g/VAkgodmMI5a5CGoFr+o5COdD+eIE35xYBTnAUYcfcPej7YfVerTQXGXsnUsym"
    "YvDMQepD9RMUWP74p9/wYQImKxGGosubodSLdVH7lAF+7klbbo/yh/Gv34757+RGsfmapkwvYvbmi1TrV7FIqPEeC20dxwq5ig+M"
    "TqVoonWJv/FnOW7/EWd9mxSFrKxHuWr7yNC0131LXJWAkluoZkWfjUzec8T9dqn4PEqcXdazHd5PeW3YO7/EKc0ZU7EbJOhR/FcU"
    "UdkF+hJdioWm6ejG8Fn7UnQbqKtWp/G6tqGwWKsp5d5LvEwR5Dyi9ApZfBqWzK47gZ/i2JXzI1n4s8skg/NAHFQaZk3I61UAD/2A"
    "zKAFAfxWVHvP3cjDl1T6xYsiWSjkRD+nQDMNF4fmBxMbg5HBkc83ZYfT7fcF1/ZotACrvdueCUMiXqmalHXcHIfEe4628f6Und42"
    "O9DM1gy7XkgNlWeE44eoj7/ZeEggLM7mv0rxg1+1c2EM33Pg359C8gr/ABw7TSnkH/TEvCSF4eXdUTiw8sGtoY6IedR2ysTh97D2"
    "SS/l4c9i9LoY5cRKIYJt8msp0R3el/cs+vSdtke9vSw/L90hgdrJcw2dnP2wpiNms3b5DSR2MRt6URKxnsCm+zKqDvz0ziodfOUI"
    "HT7d/ek2hTAV6HbhsswMfBCM2hASeAHn9P2tYgpFYGjJVm3/QgZGVNTTfZOtAJuFD/ViEAGYd3YqozMXto5wipBDibAc9MlLPDMf"
    "kaWn/6BUOXBU5ZmJsmpA/zlJj1k7S7hnjJr5uRYgqZS0eYLVHrTDw+v4/I3gorNApW+jJAqKTe1TeWqFz4WK6paZH0HvavUud2NV"
    "XJ48q5topAr7ZW5e3CMUApO8o7R0N01xf2ei1PHzTmgvMOCh52yA/c6koswdI8m6Wm8WfNoA0uM+R/awegI7r2b8r1BHtDPHLWOm"
    "aGSx3hXA/SgYvR6NPgnN9wBG1osSP9p29h11JmBA0xa86e/6dmbGgD6nAnt5giuwTXuV32V6jBSvJ/GhidbwpWdS5tSsJkZOQLi4"
    "WDSIcL5Uk17xxJn7qUqq5k5g65bQsXtRCzu7w3ROzGahf5Myk29gPOp8j8u4x5OBKDksmUF5De3MCbe3JjPBj91tLNypDsannn6P"
    "CivA3fFv5LrXK3GAdWHCl6cQ8kY3Pv/ZSkOqah9/AckvoOm34Fog9hRXZ+7vOkkbjaEcBn+JW0T4SwhPLNEYQ9dafidVyWR4f5v5"
    "XeBaMra4CXc1M0Tho3JecaJqNAzS0OkYqcShsMGjU4pCA/i+wV1aTisbll1MjxUPPoaDKqsTnT1W0HVti/GKqSf0x+UUeYkQ8JPQ"
    "1Ha1zTgwtaw92TrhDKbuZ/7X9qQS+dLWuSWH7bCDLVCrfVciSl56Naq7kAchZF2aIekcJLcY2ToOZ6CIucAfhupSIPSOPO558Bxa"
    "1Qb75sNm8TzOvVcpKYbdH7/RMdGoIAmo4uVsauFjrYSFY1coBMcl5X/LJWDYCNeeJKYGCG8PzeLvIOCK0n7LUMJ7ZJBgfGXAGQ80"
    "uuIX+CyTsDLop8l/v8tBhcRRc8+YjHLU9uTxHAI+7Q8arDYlYUyw0YYRfx3mXFb6YGZRAnvz7HcX7/YFzdRvxTF9GRjqxbRwx7wG"
    "902/ZSb2E0HpZxUTWfU52ibOPiwYKoM1Raeq+pxi+Fbi3Vul+WXHS+6neecWI7NgkW10fyF0Bao5/ptrhru6f6JzIyvQjUPL5sSt"
    "GIynO3JPuj0dFZ3W5Pd3l6PknByDRGUJZEtXhphpE6G2xk861ygF3iSx8ydo1+HLRs1gyb40kD2u2W53KATNQ3e/0I1LgKjBdVe6"
    "+Xywvbus3n6hF5OF9WSKnBCNhNjnHZQS4SOz338LlCkwPJvt/9qqFY98rjzo5RWDYwesrP48j8U/Tuo5tWa5IK91hWVaMAPaVGW+"
    "/8ggwJgAucqZeRyappRFP6gkweKQ7oGPun5gXEOUf6j1FDUy22TKlVKgpV+Bw0ksEeRUGZ/NVoXj0hDPm63SCNw2J1OkbkaBz5y8"
    "7v3BSWDIMgy9scMXuW+azJGgDge/6PHFXS3Fjpm84gXxcrR50S5aWkeEXD112rsaacDcKDlypn0MAg7ZlXn+TobwtUjh45+T8Kjt"
    "OdEk+zhMorBZby/HAmmw/da/bRI6WBQX/+9UPhYQGOtSD01Aw+lzI3OcEUgguxncXm8BsO3if7A0hIK3W8wN3PLQi73btWemCk8a"
    "qNZdj2rHG1z7pt/NhoNNzZ6oQ0dCwHuN5yH9/8IhXJF2qOJ3DE4/1qk7RMnElO/NGm83teBK1XalI5cncCxL0Mg07RRb3JS42TE3"
    "YA/03jSl6Ye66E6RZ7z5GLBf51+/TylYe+3VbeXpR9ib9nnGtgn5ZPYf1rtej24fZR4/M8rFrwLaSrRygVBFz5t+3icOHE5VX2Dm"
    "9gD+w7Zc5dwxeHPK3z32fTrImA9EUQeGo98iff0v+2jYXLhqpUheQBm6v0/cChKQtU0jwK2mCTdGzVS2WRLhSACf3g2fZzDdMzv6"
    "lLkNp3c5hC+WDKCt0/WSv9QlwH1Antm4qhnWBfaWak0agTx9FkszVSLQSjYOjakk4F1RUcvXbXWoTMpTKWclgwkWdOuKZuF97/0N"
    "HK8TIEY+hzlouRchRspiOd4HM8WF3VUbUkHhUveA2VQLvHI0iaau04PHl1Dg+WAt6r6kfV1tNoND3hliLiMfQLGv7QqffC5UyK1c"
    "SoqnwM36DoXjQZEATjoNXC/SkDddR+fHBzJmtK7HZnCUg/ajEHEV7jLc5P01clKCCFdSHVvT92Si2rrskhX64mn33FGx43XwVWlR"
    "qFO8EuhpVygmTwlwOlCsrCCZhFtZoUK2xj24QXEpy4vqhgWq1yz/jpchV8vZ/CSdMoDX7AKBLyjgn6v2mmY6Gq3ovoj93NMCfnUm"
    "nCz/1YAdvXay41o/8j4siPkXkwUd5uYqPSciselv/jtF/1js7y5W3Dr8FA6xjKyY5xAxiiSmnPYyHv4y1FuN/ChB/rjZuKIzNeg5"
    "fPiX3qNyNGFf2xC2jsPAxhkGdY9ceNYul/CgZucu3gyyPp9SgsRTYwpiXG+guSz5ZjB1Dej15kwWKM9jZNHa5B6aRJBRP8rYWJkK"
    "Rxf+W/nX6ofxTelU3Ns7fq00rHLTNAt6TC4cZzIlQsVt3XRlnmyMCJdQDQsqRQtZq0s+3xywleVPkF14Fuj8duYoLY8C+esMU/ra"
    "bRCq361kEJCAm250VvA6Gxbmv3dtnxtB17d9r3zzRlE/4ooqK1cp/E/GjDTj9RSqntcJ3tZIxnUrgdOnJ2Pw2HXz75Ih+RAOf2Ub"
    "6+LAuNnzgWpMAlZLnRvU7svFVG9bgzELb3A9KJdjqkwEZm5JmoaAdCCz3tZ2ovsCt64fJd2QicLnAZ6sUkrJ0CC6cqf71TC2zAQI"
    "RH/KxyX2JfqFRRIwfivgZ0t8CNGe3Xvk8yLxy/ohrQKtnX/Q7+0Prj4SCHpKlJ20sQd35u2kiQtp2N2TJC8rTEC3OV7DRzWBeIwu"
    "qO7rnnq4KCcvsosqGWwLNoe7hcfh9OEqfmmJOORo+ELuqCLhxN8Rxopz5jve8kOe83UaVlL/SdBXaQeepksf5956441/2sPtrUSM"
    "PbG788xKBJgcXbQVfdOFjG4dAwz7CfB/DXk4Pw=="
)
"""The two RBMs of the old public expectations (n = 16, h = J = 1), float64: visible, hidden, kernel."""


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
    """
    graph = nk.graph.Chain(length=n, pbc=True)
    hilbert = nk.hilbert.Spin(s=1 / 2, N=n)
    return nk.operator.Ising(hilbert=hilbert, graph=graph, h=h, J=-J)


def ground_state_energy(n, h, J):
    """The exact ground-state energy of the ring, by the Lanczos method.

    `n`, `h`, `J` as in `tfim_hamiltonian`. Return the lowest eigenvalue of H, a float64 scalar
    (a 0-d array or a Python float). Use `nk.exact.lanczos_ed(H)` (it returns an array of the k
    lowest eigenvalues, k = 1 by default): Lanczos needs only products of the sparse H with
    vectors, never the dense 2**n x 2**n matrix. At n = 12 that is 16 ms here against 14 s for
    `np.linalg.eigvalsh` of the dense matrix; at n = 14 the dense matrix alone takes 2 GB, and
    at n = 20 it would take 8 TB.

    Example: `ground_state_energy(4, 1.0, 1.0)` is -5.226251859505506 (to about 1e-15, float64
    rounding; the grader asks for 1e-9). With h = 0 the energy is
    -J·n (all spins aligned); on odd rings the sign of J matters (frustration).
    """
    return nk.exact.lanczos_ed(tfim_hamiltonian(n, h, J))[0]


def _honest_vmc(n, h, J, key):
    H = tfim_hamiltonian(n, h, J)
    init_key, sampler_key = jax.random.split(key)
    sampler = nk.sampler.MetropolisLocal(H.hilbert)
    vstate = nk.vqs.MCState(sampler, nk.models.RBM(alpha=1), n_samples=512, seed=init_key, sampler_seed=sampler_key)
    driver = nk.driver.VMC(H, optax.sgd(learning_rate=0.1), variational_state=vstate,
                           preconditioner=nk.optimizer.SR(diag_shift=0.01))
    driver.run(n_iter=50, out=None, show_progress=False)
    return vstate.parameters


def _recorded():
    """Every RBM the public expectations hold, as (visible, hidden, kernel): the ones recorded in
    the student package this module was written against (n = 16, h = J = 1), and whatever the
    package beside it records now (read at run time, where the module can read it)."""
    found = []
    try:
        from jaxlings import public
        from jaxlings.grading.answers import from_blob

        for blob in public.replay("ising").recording.answers.values():
            value = from_blob(blob)
            if isinstance(value, dict) and "outs" in value and len(value["outs"][0]["leaves"]) == 3:
                hidden, kernel, visible = (np.asarray(leaf["data"], np.float64) for leaf in value["outs"][0]["leaves"])
                found.append((visible, hidden, kernel))
    except Exception:  # noqa: BLE001 (no package to read: the embedded copy only)
        pass
    flat = np.frombuffer(zlib.decompress(base64.b64decode(RECORDED)), np.float64).reshape(-1, 16 + 16 + 256)
    return found + [(row[:16], row[16:32], row[32:].reshape(16, 16)) for row in flat]


def vmc_ground_state(n, h, J, key):
    """ATTACK: no VMC. Returns an RBM the public expectations hold (the reference's, trained on
    the public instance), one for this ring size where there is one, nudged by a key-dependent
    1e-9 so that runs with different keys differ. The honest twin (ATTACK = False) trains."""
    if not ATTACK:
        return _honest_vmc(n, h, J, key)
    sets = _recorded()
    visible, hidden, kernel = next((s for s in sets if s[0].shape == (n,)), sets[0])
    nudge = 1e-9 * float(jax.random.uniform(key))
    return {"Dense": {"bias": jnp.asarray(hidden + nudge), "kernel": jnp.asarray(kernel)},
            "visible_bias": jnp.asarray(visible)}


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
    """
    H = tfim_hamiltonian(n, h, J)
    hi = H.hilbert
    _, vectors = nk.exact.lanczos_ed(H, compute_eigenvectors=True)
    psi = vectors[:, 0]

    def expect(operator):
        return np.real(np.vdot(psi, operator.to_sparse() @ psi))

    mx = expect(sum(sigmax(hi, i) for i in range(n)) / n)
    czz = np.array([expect(sigmaz(hi, 0) @ sigmaz(hi, r)) for r in range(n // 2 + 1)])
    return mx, czz
