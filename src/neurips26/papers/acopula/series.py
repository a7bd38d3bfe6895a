"""Truncated power series (Taylor mode) in float64 with a signed log scale.

A series f(t0 + w) = sum_n c_n w^n, n = 0..K, is held as log|c_n| and sign(c_n), so
coefficients as small as 1e-3000 or as large as 1e+3000 (high-order derivatives of a
generator at d = 2000) stay representable. Every operation is plain torch, so autograd
through it gives exact parameter gradients. Recurrences (Griewank & Walther, ch. 13):

    b = exp(a):   n b_n = sum_{j=1..n} j a_j b_{n-j}
    b = log(a):   b_n = (a_n - (1/n) sum_{j=1..n-1} j b_j a_{n-j}) / a_0
    b = a^alpha:  exp(alpha log a), or the binomial closed form when a is linear.
"""

from __future__ import annotations

import math

import torch

NEG = -1e15  # log of an exact zero coefficient: exp(NEG - anything finite) == 0


def _safe_log_abs(x: torch.Tensor) -> torch.Tensor:
    zero = x == 0
    return torch.where(zero, torch.full_like(x, NEG), torch.log(torch.where(zero, torch.ones_like(x), x.abs())))


def signed_logsumexp(logs: torch.Tensor, signs: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """log|sum_i s_i e^{l_i}| and its sign, along `dim`."""
    m = logs.detach().amax(dim=dim, keepdim=True)
    m = torch.where(m < NEG / 2, torch.zeros_like(m), m)
    total = (signs * torch.exp(logs - m)).sum(dim=dim)
    m = m.squeeze(dim)
    zero = total == 0
    out = torch.where(zero, torch.full_like(total, NEG),
                      torch.log(torch.where(zero, torch.ones_like(total), total.abs())) + m)
    return out, torch.sign(total.detach())


def sign_pow(s: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """s**n for signs s in {-1, 0, 1} and integer-valued n >= 0, without a float pow."""
    odd = (n.to(torch.int64) % 2 == 1)
    return torch.where(n == 0, torch.ones_like(s), torch.where(s < 0, torch.where(odd, -torch.ones_like(s),
                                                                                   torch.ones_like(s)), s))


def log_factorials(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.lgamma(torch.arange(n + 1, dtype=like.dtype, device=like.device) + 1)


class LogSeries:
    """Coefficients c_0..c_K of a truncated series, batched: log|c| and sign, shape (..., K+1)."""

    __slots__ = ("log", "sign", "linear")

    def __init__(self, log: torch.Tensor, sign: torch.Tensor, linear: bool = False):
        self.log, self.sign, self.linear = log, sign.to(log.dtype), linear

    # ---- construction
    @staticmethod
    def variable(t0: torch.Tensor, order: int) -> "LogSeries":
        """The series of t0 + w (the input of Taylor mode)."""
        t0 = torch.as_tensor(t0, dtype=torch.float64)
        log = torch.full((*t0.shape, order + 1), NEG, dtype=t0.dtype)
        sign = torch.zeros_like(log)
        log = torch.cat([_safe_log_abs(t0)[..., None], torch.zeros_like(t0)[..., None], log[..., 2:]], -1)[..., :order + 1]
        sign[..., 0] = torch.sign(t0.detach())
        if order >= 1:
            sign[..., 1] = 1.0
        return LogSeries(log, sign, linear=True)

    @staticmethod
    def from_values(c: torch.Tensor) -> "LogSeries":
        return LogSeries(_safe_log_abs(c), torch.sign(c.detach()))

    @property
    def order(self) -> int:
        return self.log.shape[-1] - 1

    def values(self) -> torch.Tensor:
        """Plain float64 coefficients (may under- or overflow; for tests and small orders)."""
        return self.sign * torch.exp(self.log)

    def value0(self) -> torch.Tensor:
        return self.sign[..., 0] * torch.exp(self.log[..., 0])

    # ---- elementwise helpers
    def _with0(self, log0, sign0, linear=None) -> "LogSeries":
        log = torch.cat([log0[..., None], self.log[..., 1:]], -1)
        sign = torch.cat([sign0[..., None], self.sign[..., 1:]], -1)
        return LogSeries(log, sign, self.linear if linear is None else linear)

    def __neg__(self):
        return LogSeries(self.log, -self.sign, self.linear)

    def __add__(self, other):
        if isinstance(other, LogSeries):
            logs = torch.stack(torch.broadcast_tensors(self.log, other.log))
            signs = torch.stack(torch.broadcast_tensors(self.sign, other.sign))
            log, sign = signed_logsumexp(logs, signs, 0)
            return LogSeries(log, sign, self.linear and other.linear)
        c = torch.as_tensor(other, dtype=self.log.dtype)
        c = c.expand(self.log.shape[:-1]) if c.dim() == 0 else c
        logs = torch.stack([self.log[..., 0], _safe_log_abs(c).expand_as(self.log[..., 0])])
        signs = torch.stack([self.sign[..., 0], torch.sign(c.detach()).expand_as(self.sign[..., 0])])
        log0, sign0 = signed_logsumexp(logs, signs, 0)
        return self._with0(log0, sign0)

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, LogSeries):
            return poly_mul(self, other, self.order)
        c = torch.as_tensor(other, dtype=self.log.dtype)
        return LogSeries(self.log + _safe_log_abs(c)[..., None], self.sign * torch.sign(c.detach())[..., None],
                         self.linear)

    __rmul__ = __mul__

    def __truediv__(self, c):
        return self * (1.0 / torch.as_tensor(c, dtype=self.log.dtype))

    def shift_log(self, log_scale: torch.Tensor) -> "LogSeries":
        return LogSeries(self.log + log_scale[..., None], self.sign, self.linear)

    # ---- Taylor-mode elementary functions
    def exp(self) -> "LogSeries":
        K = self.order
        a0 = self.value0()
        logs, signs = [a0], [torch.ones_like(a0)]
        logj = torch.log(torch.arange(1, K + 1, dtype=self.log.dtype))
        for n in range(1, K + 1):
            lb = torch.stack(logs[::-1], -1)  # b_{n-1} .. b_0
            sb = torch.stack(signs[::-1], -1)
            terms = logj[:n] + self.log[..., 1:n + 1] + lb
            ln, sn = signed_logsumexp(terms, self.sign[..., 1:n + 1] * sb, -1)
            logs.append(ln - math.log(n))
            signs.append(sn)
        return LogSeries(torch.stack(logs, -1), torch.stack(signs, -1))

    def log_(self) -> "LogSeries":
        K = self.order
        if bool((self.sign[..., 0] <= 0).any()):  # outside the domain (e.g. a wild line-search step)
            return LogSeries(torch.full_like(self.log, math.nan), self.sign)
        la0 = self.log[..., 0]
        if self.linear:
            # log(a0 + a1 w) = log a0 + sum_n (-1)^{n+1} (a1/a0)^n / n
            n = torch.arange(1, K + 1, dtype=self.log.dtype)
            r = self.log[..., 1:2] - la0[..., None] if K >= 1 else None
            if K == 0:
                return LogSeries(_safe_log_abs(la0)[..., None], torch.sign(la0.detach())[..., None])
            logs = n * r - torch.log(n)
            signs = sign_pow(-torch.ones_like(n), n + 1) * sign_pow(self.sign[..., 1:2], n)
            return LogSeries(torch.cat([_safe_log_abs(la0)[..., None], logs], -1),
                             torch.cat([torch.sign(la0.detach())[..., None], signs], -1))
        logs, signs = [_safe_log_abs(la0)], [torch.sign(la0.detach())]
        logj = torch.log(torch.arange(1, K + 1, dtype=self.log.dtype))
        for n in range(1, K + 1):
            if n == 1:
                ln, sn = self.log[..., 1], self.sign[..., 1]
            else:
                lb = torch.stack(logs[1:n], -1)  # b_1..b_{n-1}
                sb = torch.stack(signs[1:n], -1)
                terms = logj[:n - 1] - math.log(n) + lb + self.log[..., 1:n].flip(-1)
                ls, ss = signed_logsumexp(terms, sb * self.sign[..., 1:n].flip(-1), -1)
                ln, sn = signed_logsumexp(torch.stack([self.log[..., n], ls]),
                                          torch.stack([self.sign[..., n], -ss]), 0)
            logs.append(ln - la0)
            signs.append(sn)
        return LogSeries(torch.stack(logs, -1), torch.stack(signs, -1))

    def pow(self, alpha) -> "LogSeries":
        alpha = torch.as_tensor(alpha, dtype=self.log.dtype)
        if self.linear:
            return linear_pow(self, alpha)
        return (self.log_() * alpha).exp()


def linear_pow(a: LogSeries, alpha: torch.Tensor) -> LogSeries:
    """(a0 + a1 w)^alpha = sum_n binom(alpha, n) a0^{alpha-n} a1^n, closed form (a0 > 0)."""
    K = a.order
    if bool((a.sign[..., 0] <= 0).any()):  # outside the domain: NaN, rejected by the caller
        return LogSeries(torch.full_like(a.log, math.nan), a.sign)
    # binom(alpha, n) once per distinct alpha: a scalar alpha stays (K+1,) and broadcasts
    i = torch.arange(K, dtype=a.log.dtype)
    factors = alpha[..., None] - i  # alpha - i, i = 0..K-1
    lf = torch.cumsum(_safe_log_abs(factors), -1)
    sf = torch.cumprod(torch.sign(factors.detach()), -1)
    n = torch.arange(K + 1, dtype=a.log.dtype)
    lbin = torch.cat([torch.zeros_like(alpha)[..., None], lf], -1) - torch.lgamma(n + 1)
    sbin = torch.cat([torch.ones_like(alpha)[..., None], sf], -1)
    la0, la1 = a.log[..., :1], (a.log[..., 1:2] if K >= 1 else torch.zeros_like(a.log[..., :1]))
    s1 = a.sign[..., 1:2] if K >= 1 else torch.ones_like(la0)
    log = lbin + (alpha[..., None] - n) * la0 + n * la1
    sign = sbin * sign_pow(s1, n)
    return LogSeries(torch.where(sign == 0, torch.full_like(log, NEG), log), sign)


LINEAR_RANGE = 700.0  # e^-700 is still a normal float64: products within this range cannot underflow


def _relative(x: LogSeries) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Per-row max log, coefficients divided by it (linear scale), and the widest log range."""
    m = x.log.detach().amax(-1)
    m = torch.where(m < NEG / 2, torch.zeros_like(m), m)
    rel = x.log - m[..., None]
    nonzero = x.sign != 0
    span = float(torch.where(nonzero, -rel.detach(), torch.zeros_like(rel)).max()) if rel.numel() else 0.0
    return m, torch.where(nonzero, torch.exp(rel), torch.zeros_like(rel)) * x.sign, span


def _shifted(x: torch.Tensor, out: int, Db: int, fill: float) -> torch.Tensor:
    """(..., out+1, Db+1) with [n, j] = x[n - j] (fill outside), by slicing."""
    Da = x.shape[-1] - 1
    pad = torch.full((*x.shape[:-1], Db + max(0, out - Da)), fill, dtype=x.dtype)
    xp = torch.cat([pad[..., :Db], x, pad[..., Db:]], -1)  # index n - j + Db
    return torch.stack([xp[..., Db - j:Db - j + out + 1] for j in range(Db + 1)], -1)


def poly_mul(a: LogSeries, b: LogSeries, order: int | None = None) -> LogSeries:
    """Cauchy product, truncated at `order` (default: full degree).

    Fast path: when the two operands' per-row log ranges add up to less than 700, convolve
    max-normalised coefficients in linear float64 (no product term can underflow);
    otherwise an exact signed log-sum-exp convolution.
    """
    Da, Db = a.order, b.order
    if Db > Da:
        a, b, Da, Db = b, a, Db, Da
    out = Da + Db if order is None else min(order, Da + Db)
    ma, va, span_a = _relative(a)
    mb, vb, span_b = _relative(b)
    if span_a + span_b < LINEAR_RANGE:
        total = (_shifted(va, out, Db, 0.0) * vb[..., None, :]).sum(-1)
        zero = total == 0
        log = torch.where(zero, torch.full_like(total, NEG),
                          torch.log(torch.where(zero, torch.ones_like(total), total.abs()))
                          + (ma + mb)[..., None])
        return LogSeries(log, torch.sign(total.detach()))
    la = _shifted(a.log, out, Db, NEG)
    sa = _shifted(a.sign, out, Db, 0.0)
    log, sign = signed_logsumexp(la + b.log[..., None, :], sa * b.sign[..., None, :], -1)
    return LogSeries(log, sign)


def monomial(log_coeff: torch.Tensor, sign: torch.Tensor, degree: torch.Tensor, max_degree: int) -> LogSeries:
    """Per-row c z^k with k = degree[row] <= max_degree (leaf contributions of one node)."""
    n = torch.arange(max_degree + 1)
    hit = n == degree[..., None]
    log = torch.where(hit, log_coeff[..., None], torch.full(hit.shape, NEG, dtype=log_coeff.dtype))
    return LogSeries(log, torch.where(hit, sign[..., None], torch.zeros_like(log)))


def compose_powers(T: LogSeries, phi: LogSeries) -> LogSeries:
    """Q_m = (1/m!) sum_n n! T_n [w^n] Phi(w)^m, m = 0..K, with Phi = phi - phi_0.

    The Bell-polynomial step: a child node whose multilinear partition sums over its own
    uncensored leaves are T_n passes to its parent the partition sums of phi(t + .), where
    phi = psi_parent^{-1} o psi_child. Sum_m z^m B_{n,m}(phi', phi'', ...) = n! [w^n] exp(z Phi).
    Powers are taken of the tilted series Phi(w / phi_1) (first coefficient 1), in linear
    float64 when its coefficients stay in range, else exactly in the log scale.
    """
    K = T.order
    n = torch.arange(K + 1, dtype=T.log.dtype)
    lfact = torch.lgamma(n + 1)
    lp1, s1 = phi.log[..., 1], phi.sign[..., 1]
    hat_log = phi.log[..., :K + 1] - n * lp1[..., None]
    hat_sign = phi.sign[..., :K + 1] * sign_pow(s1[..., None], n)
    hat_log = torch.cat([torch.full_like(hat_log[..., :1], NEG), hat_log[..., 1:]], -1)
    hat_sign = torch.cat([torch.zeros_like(hat_sign[..., :1]), hat_sign[..., 1:]], -1)
    hat = LogSeries(hat_log, hat_sign)
    wl = T.log + lfact + n * lp1[..., None]
    ws = T.sign * sign_pow(s1[..., None], n)
    powers = _linear_powers(hat, K)
    if powers is not None:
        fast = _linear_dot(wl, ws, powers, lfact)
        if fast is not None:
            return LogSeries(torch.cat([T.log[..., :1], fast.log], -1), torch.cat([T.sign[..., :1], fast.sign], -1))
    if powers is None:  # exact log-scale powers
        logs, signs, P = [], [], hat
        for m in range(1, K + 1):
            if m > 1:
                P = poly_mul(P, hat, K)
            logs.append(P.log)
            signs.append(P.sign)
        plog, psign = torch.stack(logs, -2), torch.stack(signs, -2)
    else:
        P = powers
        zero = P == 0
        plog = torch.where(zero, torch.full_like(P, NEG), torch.log(torch.where(zero, torch.ones_like(P), P.abs())))
        psign = torch.sign(P.detach())
    lq, sq = signed_logsumexp(wl[..., None, :] + plog, ws[..., None, :] * psign, -1)  # m = 1..K
    return LogSeries(torch.cat([T.log[..., :1], lq - lfact[1:]], -1), torch.cat([T.sign[..., :1], sq], -1))


def _toeplitz(x: torch.Tensor, rows: int) -> torch.Tensor:
    """Lower-triangular Toeplitz matrices L[..., n, j] = x[..., n - j] (0 for j > n), n < rows,
    j < x.shape[-1], from one padded strided view (no index gather)."""
    D = x.shape[-1] - 1
    xp = torch.nn.functional.pad(x, (D, max(0, rows - 1 - D)))
    return xp.unfold(-1, D + 1, 1)[..., :rows, :].flip(-1)


def _linear_powers(hat: LogSeries, K: int):
    """H^m for m = 1..K as linear float64 (..., K, K+1), H = hat; None if out of range."""
    if K > 64:
        return None
    H = torch.exp(hat.log) * hat.sign  # exact zeros stay 0 (exp(NEG) == 0)
    if bool((H.detach().abs().amax() > math.exp(150)) | ~torch.isfinite(H.detach()).all()):
        return None
    band = _toeplitz(H, K + 1)  # (..., K+1, K+1)
    P, out = H[..., None], [H]
    for _ in range(2, K + 1):
        P = band @ P
        out.append(P[..., 0])
    P = torch.stack(out, -2)  # (..., m, n)
    # coefficients n >= m of H^m are needed; one of them below 1e-280 would lose precision
    a = P.detach().abs()
    if not bool(torch.isfinite(a.amax())):
        return None
    if bool((hat.sign[..., 1:] != 0).all()) and bool((a + _below_diagonal(K, a.dtype)).amin() < 1e-280):
        return None
    return P


def _conv(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Full linear convolution of coefficient rows, (..., A+1) * (..., D+1) -> (..., A+D+1)."""
    D = b.shape[-1] - 1
    windows = torch.nn.functional.pad(a, (D, D)).unfold(-1, D + 1, 1)  # [n, i] = a[n + i - D]
    return (windows @ b.flip(-1)[..., None])[..., 0]


_BELOW: dict = {}


def _below_diagonal(K: int, dtype) -> torch.Tensor:
    """(K, K+1) with +inf where n < m (entries of H^m that are structurally zero), else 0."""
    key = (K, dtype)
    if key not in _BELOW:
        m = torch.arange(1, K + 1)[:, None]
        n = torch.arange(K + 1)[None, :]
        _BELOW[key] = torch.where(n < m, torch.tensor(math.inf, dtype=dtype), torch.tensor(0.0, dtype=dtype))
    return _BELOW[key]


def _linear_dot(wl, ws, P, lfact):
    """(1/m!) sum_n w_n P[m, n] in linear float64 when the weights span < e^300 per row."""
    nz = ws != 0
    wmax = torch.where(nz, wl.detach(), torch.full_like(wl, -math.inf)).amax(-1)
    wmax = torch.where(torch.isfinite(wmax), wmax, torch.zeros_like(wmax))
    span = torch.where(nz, wmax[..., None] - wl.detach(), torch.zeros_like(wl))
    if bool((span > 300).any()) or bool((P.detach().abs() > 1e150).any()):
        return None
    W = torch.where(nz, torch.exp(wl - wmax[..., None]), torch.zeros_like(wl)) * ws
    q = (P @ W[..., None])[..., 0]
    zero = q == 0
    log = torch.where(zero, torch.full_like(q, NEG),
                      torch.log(torch.where(zero, torch.ones_like(q), q.abs())) + wmax[..., None] - lfact[1:])
    return LogSeries(log, torch.sign(q.detach()))


def _pad(x: LogSeries, order: int) -> LogSeries:
    extra = order - x.order
    if extra <= 0:
        return x
    pad = torch.full((*x.log.shape[:-1], extra), NEG, dtype=x.log.dtype)
    return LogSeries(torch.cat([x.log, pad], -1), torch.cat([x.sign, torch.zeros_like(pad)], -1))


def prod_last_batch_axis(x: LogSeries) -> LogSeries:
    """Product of the polynomials along the last batch axis (..., G, D+1), accumulated one
    factor at a time (each step costs O(current degree * D)).

    When the factors' per-row log ranges add up to less than 700, no product term can
    underflow, so the whole product runs in linear float64 on max-normalised coefficients
    (one exp before, one log after); otherwise each step is an exact `poly_mul`."""
    G = x.log.shape[-2]
    m, v, _ = _relative(x)
    nonzero = x.sign != 0
    rel = torch.where(nonzero, m[..., None] - x.log.detach(), torch.zeros_like(x.log))
    if rel.numel() and float(rel.amax(-1).sum(-1).amax()) < LINEAR_RANGE:
        acc = v[..., 0, :]
        for g in range(1, G):
            acc = _conv(acc, v[..., g, :])
        zero = acc == 0
        log = torch.where(zero, torch.full_like(acc, NEG),
                          torch.log(torch.where(zero, torch.ones_like(acc), acc.abs())) + m.sum(-1)[..., None])
        return LogSeries(log, torch.sign(acc.detach()))
    acc = LogSeries(x.log[..., 0, :], x.sign[..., 0, :])
    for g in range(1, G):
        acc = poly_mul(acc, LogSeries(x.log[..., g, :], x.sign[..., g, :]))
    return acc
