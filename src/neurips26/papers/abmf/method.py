"""Symmetric and asymmetric Burer-Monteiro factorisation of a PSD-constrained quadratic program.

The convex problem is  min_{W PSD} h(W),  h(W) = 1/2 ||A vec(W) - b||^2 + <C, W>  (W symmetric).
sBMF writes W = X X^T and minimises h(X X^T). aBMF writes Z = X Y^T and minimises

    F_gamma(X, Y) = h(sym(X Y^T)) + gamma/2 ||X - Y||_F^2,      sym(Z) = (Z + Z^T)/2,

which is convex in X for fixed Y and in Y for fixed X, so it is solved by alternating exact
minimisation (each half-step is a positive-definite linear system). With G = grad h(sym(X Y^T))
(a symmetric matrix), its critical points satisfy G (X + Y) = 0 and G (X - Y) = 2 gamma (X - Y):
the columns of X - Y are eigenvectors of G with eigenvalue 2 gamma. Hence X = Y at every
critical point where 2 gamma > lambda_max(G), and then X is a critical point of sBMF. The
threshold computed here is gamma* = lambda_max(Lambda*)/2 with Lambda* = grad h(W*) the
multiplier of the PSD constraint at the convex optimum W*: below it, (X*, X*) is a strict saddle
of F_gamma (direction (E, -E), E = u e1^T, u the top eigenvector of Lambda*); above it, it is
a local minimum. See README.md for the derivation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize


@dataclass
class QuadraticPSDProblem:
    """h(W) = 1/2 ||A vec(W) - b||^2 + <C, W>; `design=None` means A is the identity on vec(W).

    Rows of A are vec of symmetric matrices, so h(sym Z) = h(Z) along every linear map."""

    name: str
    n: int
    rank: int
    design: np.ndarray | None
    target: np.ndarray
    linear: np.ndarray

    def residual(self, w: np.ndarray) -> np.ndarray:
        return (w if self.design is None else self.design @ w) - self.target

    def value(self, W: np.ndarray) -> float:
        r = self.residual(W.reshape(-1))
        return float(0.5 * r @ r + np.sum(self.linear * W))

    def gradient(self, W: np.ndarray) -> np.ndarray:
        r = self.residual(W.reshape(-1))
        g = r if self.design is None else self.design.T @ r
        G = g.reshape(self.n, self.n) + self.linear
        return 0.5 * (G + G.T)

    def lipschitz(self) -> float:
        if self.design is None:
            return 1.0
        return float(np.linalg.norm(self.design, 2) ** 2)


def sym(Z: np.ndarray) -> np.ndarray:
    return 0.5 * (Z + Z.T)


# ---------------------------------------------------------------- problems
def psd_approximation(n: int, rank: int, negative: float, rng: np.random.Generator) -> QuadraticPSDProblem:
    """h(W) = 1/2 ||W - M||_F^2 with M = Q diag(eig) Q^T: `rank` positive eigenvalues (4 .. 2),
    the rest negative in [-negative, 0) with -negative attained. The PSD optimum is the
    eigen-truncation of M (closed form, `psd_truncation`), of rank `rank`."""
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    rest = -negative * rng.uniform(0.0, 0.5, n - rank - 1)
    eig = np.concatenate([np.linspace(4.0, 2.0, rank), rest, [-negative]])
    M = (Q * eig) @ Q.T
    return QuadraticPSDProblem("psd_approximation", n, rank, None, M.reshape(-1), np.zeros((n, n)))


def matrix_sensing(n: int, rank: int, measurements: int, negative: float, noise: float,
                   rng: np.random.Generator) -> QuadraticPSDProblem:
    """h(W) = 1/(2m) sum_i (<A_i, W> - b_i)^2 with symmetric Gaussian A_i and
    b = A(Z_planted - negative * v v^T) + noise: the unconstrained fit wants a negative eigenvalue."""
    U = rng.standard_normal((n, rank))
    Q, _ = np.linalg.qr(np.concatenate([U, rng.standard_normal((n, 1))], axis=1))
    v = Q[:, rank]
    truth = U @ U.T / np.sqrt(n) - negative * np.outer(v, v)
    A = rng.standard_normal((measurements, n, n))
    A = 0.5 * (A + A.transpose(0, 2, 1))
    design = A.reshape(measurements, -1) / np.sqrt(measurements)
    target = design @ truth.reshape(-1) + noise * rng.standard_normal(measurements) / np.sqrt(measurements)
    return QuadraticPSDProblem("matrix_sensing", n, rank, design, target, np.zeros((n, n)))


def maxcut(n: int, rank: int, edge_prob: float, penalty: float, rng: np.random.Generator) -> QuadraticPSDProblem:
    """MaxCut SDP relaxation max <L, W>/4 s.t. diag W = 1, W PSD, with the diagonal constraint as
    a quadratic penalty: h(W) = -<L, W>/4 + penalty/2 ||diag W - 1||^2 on an Erdos-Renyi graph."""
    upper = np.triu(rng.random((n, n)) < edge_prob, 1)
    adjacency = (upper | upper.T).astype(float)
    laplacian = np.diag(adjacency.sum(1)) - adjacency
    design = np.zeros((n, n * n))
    design[np.arange(n), np.arange(n) * (n + 1)] = np.sqrt(penalty)
    return QuadraticPSDProblem("maxcut", n, rank, design, np.full(n, np.sqrt(penalty)), -laplacian / 4.0)


# ---------------------------------------------------------------- references
def psd_truncation(M: np.ndarray, rank: int) -> np.ndarray:
    """argmin over PSD W of rank <= r of ||W - M||_F: keep the r largest positive eigenvalues."""
    lam, V = np.linalg.eigh(sym(M))
    keep = np.argsort(lam)[::-1][:rank]
    lam_k = np.clip(lam[keep], 0.0, None)
    return (V[:, keep] * lam_k) @ V[:, keep].T


def project_psd(W: np.ndarray) -> np.ndarray:
    lam, V = np.linalg.eigh(sym(W))
    return (V * np.clip(lam, 0.0, None)) @ V.T


def convex_optimum(problem: QuadraticPSDProblem, iters: int = 3000, tol: float = 1e-11) -> np.ndarray:
    """min over PSD W of h(W) by accelerated projected gradient (FISTA with restarts): an
    optimiser that never factorises, used as the reference optimum and for the threshold."""
    step = 1.0 / problem.lipschitz()
    W = np.zeros((problem.n, problem.n))
    V, t, prev = W.copy(), 1.0, problem.value(W)
    for _ in range(iters):
        W_new = project_psd(V - step * problem.gradient(V))
        val = problem.value(W_new)
        if val > prev:  # adaptive restart keeps FISTA monotone
            V, t = W.copy(), 1.0
            continue
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        V = W_new + ((t - 1) / t_new) * (W_new - W)
        change = np.linalg.norm(W_new - W)
        W, t, prev = W_new, t_new, val
        if change < tol * max(1.0, np.linalg.norm(W)):
            break
    return W


def exactness_threshold(problem: QuadraticPSDProblem, W_opt: np.ndarray) -> float:
    """gamma* = lambda_max(grad h(W*)) / 2 (the PSD multiplier at the convex optimum)."""
    return 0.5 * max(0.0, float(np.linalg.eigvalsh(problem.gradient(W_opt))[-1]))


# ---------------------------------------------------------------- factorised solvers
def half_step(problem: QuadraticPSDProblem, Y: np.ndarray, gamma: float) -> np.ndarray:
    """argmin_X h(sym(X Y^T)) + gamma/2 ||X - Y||^2 (exact: a positive-definite linear system).

    With vec(sym(X Y^T)) = K vec(X): <sym(X Y^T), B> = <X, B Y> for symmetric B, the rows of
    A K are vec(A_i Y), and for A = I, K^T K = (I kron Y^T Y + T)/2 with T[(a,k),(b,l)] = Y_al Y_bk."""
    n, r = Y.shape
    if problem.design is None:
        M = problem.target.reshape(n, n)
        hessian = 0.5 * (np.kron(np.eye(n), Y.T @ Y) + np.einsum("al,bk->akbl", Y, Y).reshape(n * r, n * r))
        rhs = (M @ Y).reshape(-1)
    else:
        AK = np.matmul(problem.design.reshape(-1, n, n), Y).reshape(-1, n * r)
        hessian = AK.T @ AK
        rhs = AK.T @ problem.target
    hessian = hessian + gamma * np.eye(n * r)
    rhs = rhs - (problem.linear @ Y).reshape(-1) + gamma * Y.reshape(-1)
    return scipy.linalg.solve(hessian, rhs, assume_a="pos").reshape(n, r)


def abmf_objective(problem: QuadraticPSDProblem, X: np.ndarray, Y: np.ndarray, gamma: float) -> float:
    return problem.value(sym(X @ Y.T)) + 0.5 * gamma * float(np.sum((X - Y) ** 2))


def abmf_gradients(problem: QuadraticPSDProblem, X: np.ndarray, Y: np.ndarray, gamma: float):
    G = problem.gradient(sym(X @ Y.T))
    return G @ Y + gamma * (X - Y), G @ X - gamma * (X - Y)


@dataclass
class FactorResult:
    X: np.ndarray
    Y: np.ndarray
    iterations: int
    objective_trace: list[float]
    diverged: bool = False


def solve_abmf(problem: QuadraticPSDProblem, X0: np.ndarray, Y0: np.ndarray, gamma: float,
               max_iters: int = 2000, tol: float = 1e-10, blowup: float = 1e6) -> FactorResult:
    """Alternating convex minimisation of F_gamma: X <- argmin_X F(X, Y), Y <- argmin_Y F(X, Y).
    F decreases monotonically; stops when the relative change of (X, Y) is below `tol` or the
    factors blow up (F need not be bounded below for small gamma)."""
    X, Y = X0.copy(), Y0.copy()
    trace = [abmf_objective(problem, X, Y, gamma)]
    it = 0
    for it in range(1, max_iters + 1):
        X_new = half_step(problem, Y, gamma)
        Y_new = half_step(problem, X_new, gamma)
        change = np.sqrt(np.sum((X_new - X) ** 2) + np.sum((Y_new - Y) ** 2))
        scale = max(1.0, np.sqrt(np.sum(X_new ** 2) + np.sum(Y_new ** 2)))
        X, Y = X_new, Y_new
        trace.append(abmf_objective(problem, X, Y, gamma))
        if scale > blowup:
            return FactorResult(X, Y, it, trace, diverged=True)
        if change < tol * scale:
            break
    return FactorResult(X, Y, it, trace)


# sBMF's L-BFGS settings (scipy L-BFGS-B; its step is found by a Wolfe line search, so it has no step size)
SBMF_MAX_ITERS, SBMF_FTOL, SBMF_GTOL, SBMF_MAXCOR = 5000, 1e-12, 1e-10, 30


def solve_sbmf(problem: QuadraticPSDProblem, X0: np.ndarray, max_iters: int = SBMF_MAX_ITERS,
               tol: float = SBMF_FTOL) -> np.ndarray:
    """min_X h(X X^T) by L-BFGS with the exact gradient 2 grad h(X X^T) X."""
    n, r = X0.shape

    def fun(x):
        X = x.reshape(n, r)
        W = X @ X.T
        return problem.value(W), (2.0 * problem.gradient(W) @ X).reshape(-1)

    res = scipy.optimize.minimize(fun, X0.reshape(-1), jac=True, method="L-BFGS-B",
                                  options={"maxiter": max_iters, "ftol": tol, "gtol": SBMF_GTOL, "maxcor": SBMF_MAXCOR})
    return res.x.reshape(n, r)


# ---------------------------------------------------------------- thresholds without the optimum
def zero_threshold(problem: QuadraticPSDProblem) -> float:
    """gamma_0 = lambda_max(grad h(0)) / 2. Below it, (u e1^T, -u e1^T) with u a nonzero critical
    point of g(u) = h(-u u^T) + 2 gamma ||u||^2 is an asymmetric critical point of F_gamma (g falls
    from 0 along the top eigenvector of grad h(0)); above it no such u exists, since
    u^T grad h(-u u^T) u = u^T grad h(0) u - ||A(u u^T)||^2 <= lambda_max(grad h(0)) ||u||^2."""
    return 0.5 * max(0.0, float(np.linalg.eigvalsh(problem.gradient(np.zeros((problem.n, problem.n))))[-1]))


def apriori_threshold(problem: QuadraticPSDProblem) -> float:
    """Explicit bound from the data alone (no convex optimum), for h without a linear term (C = 0).

    At a critical point of F_gamma, G S = 0 and G D = 2 gamma D (S = (X + Y)/2, D = X - Y), with
    W = sym(X Y^T) = S S^T - D D^T / 4, so <G, W> = -gamma ||D||^2 / 2 <= 0. With G = A^*(A W - b)
    this reads ||A W||^2 <= <b, A W>, hence ||A W - b||^2 <= ||b||^2 - ||A W||^2 <= ||b||^2, and
    lambda_max(G) <= ||A^*||_{2->op} ||b|| <= ||A||_2 ||b||. D != 0 needs 2 gamma <= lambda_max(G),
    so every critical point with gamma > ||A||_2 ||b|| / 2 is symmetric. inf when C != 0 (the
    argument needs a bound on <C, W>, which the penalised MaxCut objective does not give)."""
    if np.any(problem.linear != 0):
        return float("inf")
    return 0.5 * float(np.sqrt(problem.lipschitz()) * np.linalg.norm(problem.target))


def kkt_residuals(problem: QuadraticPSDProblem, W: np.ndarray) -> dict:
    """Optimality of W for min_{W PSD} h: W PSD, grad h(W) PSD, <W, grad h(W)> = 0; each as a
    violation relative to max(1, ||grad h(W)||_F, ||W||_F)."""
    G = problem.gradient(W)
    scale = max(1.0, float(np.linalg.norm(G)), float(np.linalg.norm(W)))
    return {"primal": max(0.0, -float(np.linalg.eigvalsh(sym(W))[0])) / scale,
            "dual": max(0.0, -float(np.linalg.eigvalsh(G)[0])) / scale,
            "complementarity": abs(float(np.sum(W * G))) / scale ** 2}


# ---------------------------------------------------------------- critical-point search
def abmf_hvp(problem: QuadraticPSDProblem, X: np.ndarray, Y: np.ndarray, gamma: float,
             U: np.ndarray, V: np.ndarray):
    """Directional derivative of (grad_X F, grad_Y F) along (U, V): the Hessian of F_gamma applied
    to (U, V) (exact; h is quadratic, so grad h is affine)."""
    G = problem.gradient(sym(X @ Y.T))
    zero = problem.gradient(np.zeros_like(G))
    dG = problem.gradient(sym(U @ Y.T + X @ V.T)) - zero
    return dG @ Y + G @ V + gamma * (U - V), dG @ X + G @ U - gamma * (U - V)


@dataclass
class CriticalPoint:
    X: np.ndarray
    Y: np.ndarray
    gradient_norm: float
    asymmetry: float
    source: str


def critical_asymmetry(X: np.ndarray, Y: np.ndarray) -> float:
    """||X - Y|| / max(1, (||X|| + ||Y||)/2): relative for large factors, absolute near 0, so a
    point next to the symmetric critical point (0, 0) does not count as asymmetric."""
    return float(np.linalg.norm(X - Y) / max(1.0, 0.5 * (np.linalg.norm(X) + np.linalg.norm(Y))))


def _point(problem, X, Y, gamma, source) -> CriticalPoint:
    gx, gy = abmf_gradients(problem, X, Y, gamma)
    return CriticalPoint(X, Y, float(np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2))), critical_asymmetry(X, Y), source)


def family_critical_point(problem: QuadraticPSDProblem, gamma: float, rng: np.random.Generator,
                          starts: int = 4) -> CriticalPoint | None:
    """The family (X, Y) = (u e1^T, -u e1^T): F_gamma there is g(u) = h(-u u^T) + 2 gamma ||u||^2,
    and grad g(u) = 0 exactly when (X, Y) is critical. Minimises g by L-BFGS from `starts` random
    u and returns the lowest nonzero one (None when every start falls back to u = 0)."""
    n, r = problem.n, problem.rank

    def fun(u):
        G = problem.gradient(-np.outer(u, u))
        return problem.value(-np.outer(u, u)) + 2 * gamma * u @ u, -2 * G @ u + 4 * gamma * u

    best = None
    for _ in range(starts):
        res = scipy.optimize.minimize(fun, rng.standard_normal(n), jac=True, method="L-BFGS-B",
                                      options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-12})
        u = res.x
        if np.linalg.norm(u) < 1e-6 or not np.isfinite(res.fun):
            continue
        if best is None or res.fun < best[0]:
            best = (res.fun, u)
    if best is None:
        return None
    X = np.zeros((n, r))
    X[:, 0] = best[1]
    return _point(problem, X, -X, gamma, "family (u e1^T, -u e1^T)")


def abmf_hessian(problem: QuadraticPSDProblem, X: np.ndarray, Y: np.ndarray, gamma: float) -> np.ndarray:
    """The Hessian of F_gamma at (X, Y) as a (2nr, 2nr) matrix over z = (vec X, vec Y) (row-major),
    column k = `abmf_hvp` along the k-th basis direction, built in one batch."""
    n, r = X.shape
    G = problem.gradient(sym(X @ Y.T))
    rows, cols = np.arange(n)[:, None], np.arange(r)[None, :]
    dW = np.zeros((2, n, r, n, n))
    dW[0, rows, cols, rows, :] = Y.T[None, :, :]     # U = e_a e_l^T: U Y^T = e_a y_l^T
    dW[1, rows, cols, :, rows] = X.T[None, :, :]     # V = e_a e_l^T: X V^T = x_l e_a^T
    dW = dW.reshape(2 * n * r, n, n)
    dW = 0.5 * (dW + dW.transpose(0, 2, 1))
    if problem.design is None:
        dG = dW
    else:
        flat = (dW.reshape(len(dW), -1) @ problem.design.T) @ problem.design
        dG = flat.reshape(dW.shape)
        dG = 0.5 * (dG + dG.transpose(0, 2, 1))
    size = n * r
    top = (dG @ Y).reshape(2 * size, size).T            # d(grad_X F) along each direction
    bottom = (dG @ X).reshape(2 * size, size).T         # d(grad_Y F)
    GI = np.kron(G, np.eye(r))
    I = np.eye(size)
    top[:, :size] += gamma * I
    top[:, size:] += GI - gamma * I
    bottom[:, :size] += GI - gamma * I
    bottom[:, size:] += gamma * I
    return np.vstack([top, bottom])


def stationary_search(problem: QuadraticPSDProblem, gamma: float, X0: np.ndarray, Y0: np.ndarray,
                      max_evals: int = 200, blowup: float = 1e3) -> CriticalPoint | None:
    """A critical point near (X0, Y0): least squares on the residual grad F_gamma(X, Y) with its
    exact Jacobian (the Hessian of F), i.e. Levenberg-Marquardt on ||grad F||^2 / 2. Finds saddles
    and maxima as well as minima. None when it leaves the ball of radius `blowup`."""
    n, r = X0.shape
    size = n * r

    def split(z):
        return z[:size].reshape(n, r), z[size:].reshape(n, r)

    def grad(z):
        gx, gy = abmf_gradients(problem, *split(z), gamma)
        return np.concatenate([gx.reshape(-1), gy.reshape(-1)])

    def jac(z):
        return abmf_hessian(problem, *split(z), gamma)

    z0 = np.concatenate([X0.reshape(-1), Y0.reshape(-1)])
    z = scipy.optimize.least_squares(grad, z0, jac=jac, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                     max_nfev=max_evals).x
    if not np.all(np.isfinite(z)) or np.linalg.norm(z) > blowup:
        return None
    return _point(problem, *split(z), gamma, "min ||grad F||^2")


# ---------------------------------------------------------------- cost to a common accuracy
def sbmf_trace(problem: QuadraticPSDProblem, X0: np.ndarray, max_iters: int = SBMF_MAX_ITERS, tol: float = SBMF_FTOL):
    """solve_sbmf with the objective and wall time after every L-BFGS iteration."""
    import time

    n, r = X0.shape
    values, times = [], []
    start = time.perf_counter()

    def fun(x):
        X = x.reshape(n, r)
        W = X @ X.T
        return problem.value(W), (2.0 * problem.gradient(W) @ X).reshape(-1)

    def callback(x):
        times.append(time.perf_counter() - start)
        X = x.reshape(n, r)
        values.append(problem.value(X @ X.T))

    res = scipy.optimize.minimize(fun, X0.reshape(-1), jac=True, method="L-BFGS-B", callback=callback,
                                  options={"maxiter": max_iters, "ftol": tol, "gtol": SBMF_GTOL, "maxcor": SBMF_MAXCOR})
    return res.x.reshape(n, r), values, times


def first_within(values: list[float], target: float, tol: float, scale: float) -> int | None:
    """Index of the first value with |value - target| / scale <= tol (None if never)."""
    for i, v in enumerate(values):
        if abs(v - target) / scale <= tol:
            return i
    return None


# ---------------------------------------------------------------- second-order critical points
# Start families of the second-order search (`socp_start`): plain random factors; the asymmetric
# family (u e1^T, -u e1^T), perturbed off it; and S != 0 points (S + D/2, S - D/2) with S the
# factor of the optimum and D along the top eigenvector of its multiplier grad h(W*).
SOCP_FAMILIES = ("random", "(u, -u)", "S != 0")


@dataclass
class SecondOrderPoint:
    """A local minimiser's end point with what certifies it: ||grad F||, the smallest eigenvalue
    of the Hessian of F and its largest |eigenvalue| (the scale of the curvature tolerance)."""

    X: np.ndarray
    Y: np.ndarray
    gradient_norm: float
    min_eigenvalue: float
    hessian_norm: float
    asymmetry: float
    size: float


def certify_point(problem: QuadraticPSDProblem, X: np.ndarray, Y: np.ndarray, gamma: float) -> SecondOrderPoint:
    """Gradient norm and the extreme eigenvalues of the exact Hessian (`abmf_hessian`) at (X, Y)."""
    gx, gy = abmf_gradients(problem, X, Y, gamma)
    H = abmf_hessian(problem, X, Y, gamma)
    lam = np.linalg.eigvalsh(0.5 * (H + H.T))
    return SecondOrderPoint(X, Y, float(np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2))), float(lam[0]),
                            float(max(abs(lam[0]), abs(lam[-1]))), critical_asymmetry(X, Y),
                            float(0.5 * (np.linalg.norm(X) + np.linalg.norm(Y))))


def is_second_order(point: SecondOrderPoint, gradient_tol: float, curvature_tol: float) -> bool:
    """||grad F|| <= gradient_tol max(1, size) and lambda_min(Hessian) >= -curvature_tol max(1, ||Hessian||)."""
    return (point.gradient_norm <= gradient_tol * max(1.0, point.size)
            and point.min_eigenvalue >= -curvature_tol * max(1.0, point.hessian_norm))


def local_minimum(problem: QuadraticPSDProblem, gamma: float, X0: np.ndarray, Y0: np.ndarray,
                  max_iters: int = 5000, polish_evals: int = 20, blowup: float = 1e3):
    """A local minimiser of F_gamma from (X0, Y0): L-BFGS (which escapes strict saddles from almost
    every start), then Newton-type polishing of grad F = 0 (`stationary_search`) kept only when it
    lowers the gradient without leaving the point. None when the factors pass `blowup` (F
    unbounded below along the run)."""
    n, r = X0.shape
    size = n * r

    def fun(z):
        X, Y = z[:size].reshape(n, r), z[size:].reshape(n, r)
        gx, gy = abmf_gradients(problem, X, Y, gamma)
        return abmf_objective(problem, X, Y, gamma), np.concatenate([gx.reshape(-1), gy.reshape(-1)])

    def stop_on_blowup(intermediate_result):
        if np.linalg.norm(intermediate_result.x) > blowup:
            raise StopIteration

    z0 = np.concatenate([X0.reshape(-1), Y0.reshape(-1)])
    res = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B", callback=stop_on_blowup,
                                  options={"maxiter": max_iters, "ftol": 1e-15, "gtol": 1e-11, "maxcor": 30})
    z = res.x
    if not np.all(np.isfinite(z)) or np.linalg.norm(z) > blowup:
        return None
    X, Y = z[:size].reshape(n, r), z[size:].reshape(n, r)
    polished = stationary_search(problem, gamma, X, Y, max_evals=polish_evals, blowup=blowup)
    if polished is not None:
        moved = np.sqrt(np.sum((polished.X - X) ** 2) + np.sum((polished.Y - Y) ** 2))
        if polished.gradient_norm < np.linalg.norm(res.jac) and moved <= 1e-4 * max(1.0, np.linalg.norm(z)):
            X, Y = polished.X, polished.Y
    return X, Y


def optimum_factor(W: np.ndarray, rank: int) -> np.ndarray:
    """X (n x rank) with X X^T the best rank-`rank` PSD part of W (zero columns past its rank)."""
    lam, V = np.linalg.eigh(sym(W))
    keep = np.argsort(lam)[::-1][:rank]
    return V[:, keep] * np.sqrt(np.clip(lam[keep], 0.0, None))


def socp_start(problem: QuadraticPSDProblem, family: str, W_opt: np.ndarray, scale: float,
               rng: np.random.Generator, u_family: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One start (X0, Y0) of a start family (SOCP_FAMILIES).

    random: entries N(0, scale^2). (u, -u): X0 = u e1^T, Y0 = -u e1^T with u the family's critical
    point at this gamma (`u_family`, when one exists) or a random u, plus N(0, (0.01 scale)^2)
    noise (the family is invariant under the gradient flow; the noise lets a saddle be left).
    S != 0: X0 = S + D/2, Y0 = S - D/2 with S the factor of W*, D = c v e_r^T, v the top
    eigenvector of grad h(W*) (the direction in which asymmetry first pays below gamma*),
    c = scale |N(0, 1)| max(1, ||W*||^(1/2)), plus the same noise."""
    n, r = problem.n, problem.rank
    noise = 0.01 * scale
    if family == "random":
        return scale * rng.standard_normal((n, r)), scale * rng.standard_normal((n, r))
    if family == "(u, -u)":
        u = u_family if u_family is not None else scale * rng.standard_normal(n)
        X0 = np.zeros((n, r))
        X0[:, 0] = u
        return X0 + noise * rng.standard_normal((n, r)), -X0 + noise * rng.standard_normal((n, r))
    if family == "S != 0":
        S = optimum_factor(W_opt, r)
        v = np.linalg.eigh(problem.gradient(W_opt))[1][:, -1]
        D = np.zeros((n, r))
        D[:, -1] = scale * abs(rng.standard_normal()) * max(1.0, float(np.sqrt(np.linalg.norm(W_opt, 2)))) * v
        return S + D / 2 + noise * rng.standard_normal((n, r)), S - D / 2 + noise * rng.standard_normal((n, r))
    raise ValueError(f"unknown start family {family!r} (known: {', '.join(SOCP_FAMILIES)})")
