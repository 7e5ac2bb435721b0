#!/usr/bin/env python3
"""Fits the polynomial coefficients of egelu's kernels and writes them as C++.

    python3 tools/fit_coefficients.py > include/egelu/internal/coefficients.hpp
    clang-format -i include/egelu/internal/coefficients.hpp

Needs mpmath (Debian: python3-mpmath). Each fit is a least-squares fit on
Chebyshev nodes in 80-digit arithmetic, with the coefficients rounded to the
target type one at a time and the rest refitted after each rounding (so the
rounding of one is absorbed by the others). The error printed beside each table
is re-measured on a dense grid with the rounded coefficients.
"""
import mpmath as mp

mp.mp.dps = 80
LN2 = mp.log(2)
LOG2E = 1 / LN2
KAPPA = mp.sqrt(mp.pi / 2)  # u = 1 / (1 + KAPPA a) has the limits of erfcx(a / sqrt2) at 0 and infinity
CENTER = mp.mpf(1) / 2      # the erf polynomials are in v = u - CENTER (exact for u >= 1/4)
SQRT_2_OVER_PI = mp.sqrt(2 / mp.pi)
TANH_CUBIC = mp.mpf("0.044715")

# type, significand bits, polynomial degrees, and per form the |x| beyond which every
# result is x or -0 (the kernels clamp |x| there, which also bounds the exponent n of
# 2^-n so that 2^(scale_offset - n) and 2^-scale_offset are both normal numbers).
TYPES = (
    dict(kind="float", bits=24, exp2_degree=4, erf_degree=18, slope_degree=3,
         erf_clamp=mp.mpf(15), tanh_clamp=mp.mpf(11), scale_offset=64),
    dict(kind="double", bits=53, exp2_degree=10, erf_degree=46, slope_degree=4,
         erf_clamp=mp.mpf(39), tanh_clamp=mp.mpf(22), scale_offset=512),
)


def round_to(x, bits):
    """Nearest binary floating-point number with `bits` significant bits."""
    if x == 0:
        return mp.mpf(0)
    m, e = mp.frexp(x)
    return mp.ldexp(mp.nint(m * 2**bits), e - bits)


def horner(coeffs, v):
    acc = mp.mpf(0)
    for c in reversed(coeffs):
        acc = acc * v + c
    return acc


def fit(fun, lo, hi, degree, bits, center=0, weight=lambda t: 1, first=None):
    """sum c_k (t - center)^k ~ fun(t) on [lo, hi]; returns (coefficients, max weighted error).
    `first`, when given, is c_0, fixed before the others are fitted."""
    n = 3 * (degree + 1) + 60
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    ts = [mid + half * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    ws = [weight(t) for t in ts]
    ys = [fun(t) for t in ts]
    fixed = [] if first is None else [first]
    for k in range(len(fixed), degree + 1):
        rows = [[(t - center) ** j * w for j in range(k, degree + 1)] for t, w in zip(ts, ws)]
        rhs = [(y - horner(fixed, t - center)) * w for t, y, w in zip(ts, ys, ws)]
        A, b = mp.matrix(rows), mp.matrix(rhs)
        fixed.append(round_to(mp.lu_solve(A.T * A, A.T * b)[0], bits))
    grid = [lo + (hi - lo) * i / 4000 for i in range(4001)]
    err = max(abs(horner(fixed, t - center) - fun(t)) * weight(t) for t in grid)
    return fixed, err


def rational(fun, lo, hi, p_degree, q_degree, iterations=12, value_at_lo=None, in_x=False):
    """P(t) / Q(t) ~ fun(x) on [lo, hi], t = (2x - lo - hi) / (hi - lo) (or t = x - lo with in_x),
    Q(0) = 1, in relative error: linear least squares of P - fun (Q - 1) = fun, reweighted by
    1 / |Q| from the previous pass (Loeb's iteration). The coefficients are then rounded to double
    one at a time, the others refitted after each (P and Q are sensitive to their rounding:
    rounding them all at once cost 5 to 100 times the fit's error). With value_at_lo, P / Q is
    held at it at x = lo (p_0 follows from the others). Returns (P, Q) and the max relative error."""
    n = 4 * (p_degree + q_degree) + 80
    var = (lambda x: x - lo) if in_x else (lambda x: (2 * x - lo - hi) / (hi - lo))
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    ts = [var(x) for x in xs]
    ys = [fun(x) for x in xs]
    count = p_degree + 1 + q_degree  # unknowns: p_0 .. p_pd, q_1 .. q_qd
    t_lo = var(lo)

    def p0_from(sol):  # the constraint P(t_lo) = v Q(t_lo)
        v = value_at_lo
        return v * (1 + sum(sol[p_degree + j] * t_lo ** j for j in range(1, q_degree + 1))) - \
            sum(sol[j] * t_lo ** j for j in range(1, p_degree + 1))

    def solve(q, fixed):
        rows, rhs = [], []
        for t, y in zip(ts, ys):
            w = 1 / (y * abs(horner(q, t)))
            full = [t**j * w for j in range(p_degree + 1)] + [-y * t**j * w for j in range(1, q_degree + 1)]
            r = y * w
            if value_at_lo is not None:  # substitute p_0
                v = value_at_lo
                full = [mp.mpf(0)] + [w * (t**j - t_lo ** j) for j in range(1, p_degree + 1)] + \
                    [w * (-y * t**j + v * t_lo ** j) for j in range(1, q_degree + 1)]
                r -= v * w
            row = []
            for idx, c in enumerate(full):
                if idx in fixed:
                    r -= c * fixed[idx]
                elif not (idx == 0 and value_at_lo is not None):
                    row.append(c)
            rows.append(row)
            rhs.append(r)
        sol = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
        out, k = [], 0
        for idx in range(count):
            if idx in fixed:
                out.append(fixed[idx])
            elif idx == 0 and value_at_lo is not None:
                out.append(mp.mpf(0))
            else:
                out.append(sol[k])
                k += 1
        if value_at_lo is not None:
            out[0] = p0_from(out)
        return out

    q = [mp.mpf(1)] + [mp.mpf(0)] * q_degree
    for _ in range(iterations):
        sol = solve(q, {})
        q = [mp.mpf(1)] + sol[p_degree + 1:]
    fixed = {}
    for idx in range(count):
        if idx == 0 and value_at_lo is not None:
            continue
        fixed[idx] = round_to(solve(q, fixed)[idx], 53)
    sol = [fixed.get(idx, mp.mpf(0)) for idx in range(count)]
    if value_at_lo is not None:
        sol[0] = round_to(p0_from(sol), 53)
    p, q = sol[:p_degree + 1], [mp.mpf(1)] + sol[p_degree + 1:]
    grid = [lo + (hi - lo) * i / 4000 for i in range(4001)]
    err = max(abs(horner(p, var(x)) / horner(q, var(x)) / fun(x) - 1) for x in grid)
    return p, q, err


def half_erfcx(a):
    """Phi(-a) e^(a^2/2) = erfcx(a / sqrt2) / 2."""
    return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2


def exp2_tail(bits, degree):
    """P with 2^f = 1 + ln2 f + f^2 P(f) for |f| <= 0.5 + 2^-8; error relative to 2^f."""
    lim = mp.mpf("0.5") + mp.mpf(2) ** -8
    fun = lambda f: (mp.power(2, f) - 1 - LN2 * f) / (f * f) if f else LN2**2 / 2
    return fit(fun, -lim, lim, degree, bits, weight=lambda f: f * f / mp.power(2, f))


def exp2_whole(bits, degree, first=None):
    """2^f for |f| <= 0.5 + 2^-8, error relative to 2^f."""
    lim = mp.mpf("0.5") + mp.mpf(2) ** -8
    return fit(lambda f: mp.power(2, f), -lim, lim, degree, bits, weight=lambda f: 1 / mp.power(2, f), first=first)


def exp2_sixteenth(bits, degree, first=None):
    """2^(f/16) for |f| <= 0.5 + 2^-8, error relative to 2^(f/16)."""
    lim = mp.mpf("0.5") + mp.mpf(2) ** -8
    return fit(lambda f: mp.power(2, f / 16), -lim, lim, degree, bits, weight=lambda f: 1 / mp.power(2, f / 16),
               first=first)


def double_bits(x):
    """The IEEE binary64 bit pattern of x, which must be a double."""
    m, e = mp.frexp(x)                        # x = m 2^e, 1/2 <= m < 1
    mantissa = int(m * 2**53)                 # 2^52 <= mantissa < 2^53
    assert mp.ldexp(mantissa, e - 53) == x
    return ((e - 1 + 1023) << 52) | (mantissa - 2**52)


def erf_shape_fun(u):
    """log2((1 + KAPPA a) erfcx(a / sqrt2)) at a = (1/u - 1) / KAPPA: in [0, 0.25]."""
    a = (1 / u - 1) / KAPPA
    return LOG2E * mp.log((1 + KAPPA * a) * mp.exp(a * a / 2) * mp.erfc(a / mp.sqrt(2)))


def erf_shape(bits, degree, a_max):
    return fit(erf_shape_fun, 1 / (1 + KAPPA * a_max), mp.mpf(1), degree, bits, center=CENTER)


def erf_slope(bits, degree, a_max):
    """log2(e) + u d/du shape(u): the exponent's response to a relative error rho ~ 2^-(bits-1) in u;
    a few per cent is plenty, since the correction it scales is itself ~rho."""
    fun = lambda u: LOG2E + u * mp.diff(erf_shape_fun, u)
    return fit(fun, 1 / (1 + KAPPA * a_max), mp.mpf(1), degree, bits, center=CENTER)


def split(x, bits, lo_quantum=None):
    """x = hi + lo with hi rounded to `bits` bits, or to a multiple of lo_quantum when given."""
    hi = round_to(x, bits) if lo_quantum is None else mp.nint(x / lo_quantum) * lo_quantum
    return hi, round_to(x - hi, bits)


def literal(x, kind):
    s = mp.nstr(x, 9 if kind == "float" else 17, min_fixed=0, max_fixed=0)
    return s + ("f" if kind == "float" else "")


def constant(name, kind, x, comment):
    return f"  static constexpr {kind} {name} = {literal(x, kind)};  // {comment}"


def table(name, kind, coeffs):
    items = ", ".join(literal(c, kind) for c in coeffs)
    return f"  static constexpr {kind} {name}[{len(coeffs)}] = {{{items}}};"


def emit_type(t):
    kind, bits = t["kind"], t["bits"]
    A = LOG2E * 2 * SQRT_2_OVER_PI            # |t| log2(e) = a (A + B a^2)
    B = A * TANH_CUBIC
    w_max = A + B * t["tanh_clamp"] ** 2      # A_hi must be a multiple of ulp(w) for every w <= w_max
    ulp_w = mp.ldexp(1, int(mp.floor(mp.log(w_max, 2))) - (bits - 1))
    lines = [f"template <>\nstruct gelu_coefficients<{kind}> {{"]
    lines.append(constant("tanh_clamp", kind, t["tanh_clamp"], "tanh form: |x| above this gives x or -0"))
    lines.append(constant("erf_clamp", kind, t["erf_clamp"], "erf form: |x| above this gives x or -0"))
    lines.append(f"  static constexpr int scale_offset = {t['scale_offset']};  // 2^-n = 2^(offset - n) 2^-offset, both normal")
    lines.append(f"  static constexpr {kind} scale_unit = 0x1p-{t['scale_offset']}{'f' if kind == 'float' else ''};  // 2^-offset")
    for name, (hi, lo), what in (
            ("tanh_a", split(A, bits, ulp_w), "2 sqrt(2/pi) log2(e), hi a multiple of ulp(w)"),
            ("tanh_b", split(B, bits), "0.044715 * tanh_a"),
            ("half_log2e", split(LOG2E / 2, bits), "log2(e) / 2"),
            ("kappa", split(KAPPA, bits), "sqrt(pi / 2)"),
            ("ln2", split(LN2, bits), "ln(2)")):
        lines.append(constant(name + "_hi", kind, hi, what))
        lines.append(constant(name + "_lo", kind, lo, "remainder"))
    c, e = exp2_tail(bits, t["exp2_degree"])
    lines.append(f"  // 2^f = 1 + ln2 f + f^2 P(f), |f| <= 0.5: max error {mp.nstr(e, 3)} relative to 2^f")
    lines.append(table("exp2_tail", kind, c))
    c, e = erf_shape(bits, t["erf_degree"], t["erf_clamp"])
    lines.append(f"  // log2((1 + kappa a) erfcx(a/sqrt2)) in v = 1/(1 + kappa a) - 1/2: max error {mp.nstr(e, 3)}")
    lines.append(table("erf_shape", kind, c))
    c, e = erf_slope(bits, t["slope_degree"], t["erf_clamp"])
    lines.append(f"  // log2(e) + u d(shape)/du in the same v: max error {mp.nstr(e, 3)}")
    lines.append(table("erf_slope", kind, c))
    lines.append("};\n")
    return "\n".join(lines)


# The float kernels run in double with a rounding test (correct_rounding.hpp): their error must
# be small next to float's rounding, some 2^-39, so that the test rarely leaves an input to the
# slower stages. Constant terms are held just below what the fit would give them, so that at
# tiny x the kernels lean towards +inf as the functions do (correct_rounding.hpp).
EXP2_DEGREE = 8            # 2^f, |f| <= 1/2 (steps of 1): 2^-40
EXP2_SIXTEENTH_DEGREE = 4  # 2^(f/16), |f| <= 1/2 (AVX-512's table of sixteenths): 2^-38.5
EXP2_CONSTANT = 1 - mp.mpf(2) ** -46
ERFCX_DEGREES = (6, 7)     # 2^-39
ERFCX_AT_ZERO = (1 - mp.mpf(2) ** -44) / 2


def emit_float_in_double():
    """The float kernels run in double: one word holds the exponent to far below float's
    rounding, and 2^f and erfcx need an accuracy that leaves float's rounding test rarely
    undecided (EXP2_DEGREE and the rest above). The exact form's erfcx(a / sqrt2) is entire and
    near 1/a for large a: one rational function covers the whole range."""
    A = LOG2E * 2 * SQRT_2_OVER_PI
    lines = ["// The float kernels evaluated in double (tanh_form.hpp, erf_form.hpp, correct_rounding.hpp).",
             "struct float_in_double_coefficients {"]
    lines.append(constant("tanh_a", "double", round_to(A, 53), "2 sqrt(2/pi) log2(e)"))
    lines.append(constant("tanh_b", "double", round_to(A * TANH_CUBIC, 53), "0.044715 * tanh_a"))
    c, e = exp2_whole(53, EXP2_DEGREE, first=EXP2_CONSTANT)
    lines.append(f"  // 2^f, |f| <= 0.5, the constant term 1 - 2^-46: max error {mp.nstr(e, 3)} relative to 2^f")
    lines.append(table("exp2", "double", c))
    c, e = exp2_sixteenth(53, EXP2_SIXTEENTH_DEGREE, first=EXP2_CONSTANT)
    lines.append(f"  // 2^(f/16), |f| <= 0.5, the constant term 1 - 2^-46: max error {mp.nstr(e, 3)} relative to 2^(f/16)")
    lines.append(table("exp2_sixteenth", "double", c))
    patterns = [double_bits(round_to(mp.power(2, mp.mpf(j) / 16), 53)) - (j << 48) for j in range(16)]
    lines.append("  // 2^(j/16) rounded to double, as bit patterns less j 2^48, j = 0..15: adding the")
    lines.append("  // integer 16m + j shifted left by 48 gives the bits of that rounding times 2^m")
    items = ", ".join(f"0x{b:016x}" for b in patterns)
    lines.append(f"  alignas(64) static constexpr std::uint64_t exp2_sixteenths_bits[16] = {{{items}}};")
    # over float's erf clamp, beyond which every float gelu_exact and gelu_exact' is x or -0
    # In a itself, not in t = 2a/c - 1 as before: in t, P and Q alternate in sign and at a = 0
    # their terms cancel to 1/20000 of their sum, which cost 2^-37 in double; in a every
    # coefficient is positive, so the evaluation cannot cancel.
    p, q, e = rational(half_erfcx, mp.mpf(0), TYPES[0]["erf_clamp"], *ERFCX_DEGREES, value_at_lo=ERFCX_AT_ZERO,
                       in_x=True)
    assert all(c > 0 for c in p + q), "the erfcx rational's coefficients must all be positive"
    lines.append("  // erfcx(a / sqrt2) / 2 = P(a) / Q(a), 0 <= a <= float's erf_clamp, all coefficients positive,")
    lines.append(f"  // (1 - 2^-44) / 2 at a = 0: max error {mp.nstr(e, 3)} relative")
    lines.append(table("erfcx_p", "double", p))
    lines.append(table("erfcx_q", "double", q))
    lines.append("};\n")
    # The slow stage's constants (double_double.hpp), each hi + lo to 2^-106 of itself.
    lines.append("// The slow stage's constants in double-double (double_double.hpp): hi + lo to 2^-106.")
    lines.append("struct double_double_constants {")
    for name, x, what in (("two_sqrt_2_over_pi", 2 * SQRT_2_OVER_PI, "2 sqrt(2/pi)"),
                          ("tanh_cubic", TANH_CUBIC, "0.044715"),
                          ("ln2", LN2, "ln(2)"),
                          ("inv_sqrt_2pi", 1 / mp.sqrt(2 * mp.pi), "1 / sqrt(2 pi)")):
        hi, lo = split(x, 53)
        lines.append(f"  static constexpr double {name}_hi = {literal(hi, 'double')};  // {what}")
        lines.append(f"  static constexpr double {name}_lo = {literal(lo, 'double')};  // remainder")
    lines.append("};\n")
    return "\n".join(lines)


# The opt-in fast kernels (fast_form.hpp): gelu = x h(x) with an absolute error bound.
FAST_CLAMP = mp.mpf(6)  # |x| >= 6: h is 0 or 1 to within 1e-9
FAST_PIECES = 32        # one vpermt2ps looks up 32 floats
FAST_DEGREE = 3


def h_tanh(x):
    return (1 + mp.tanh(SQRT_2_OVER_PI * (x + TANH_CUBIC * x**3))) / 2


def h_erf(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


def fast_pieces(h):
    """Piece k of [-6, 6] (width w = 12/32) as sum c_j (x - mid_k)^j, fitted on the piece widened by
    1% (the index rounding may pick a neighbour at a boundary); the outer pieces are 0 and 1. Returns
    the coefficient rows (row j holds c_j of every piece) and the max error in h."""
    w = 2 * FAST_CLAMP / FAST_PIECES
    rows, worst = [[] for _ in range(FAST_DEGREE + 1)], 0
    for k in range(FAST_PIECES):
        mid = -FAST_CLAMP + (k + mp.mpf(1) / 2) * w
        lo, hi = mid - w * mp.mpf("0.505"), mid + w * mp.mpf("0.505")
        if k in (0, FAST_PIECES - 1):
            c = [mp.mpf(0 if k == 0 else 1)] + [mp.mpf(0)] * FAST_DEGREE
            err = max(abs(c[0] - h(lo)), abs(c[0] - h(hi)))
        else:
            c, err = fit(h, lo, hi, FAST_DEGREE, 24, center=mid)
        worst = max(worst, err)
        for j in range(FAST_DEGREE + 1):
            rows[j].append(c[j])
    return rows, worst


def fast_rational(h, bits, p_degree, q_degree, fit_end, iterations=10):
    """h(x) = 1/2 + x P(x^2) / Q(x^2), Q(0) = 1, on [0, fit_end] in absolute error (Loeb's
    iteration), coefficients rounded to `bits` bits. Returns P, Q, the max error in h up to the
    clamp, and the clamp: the first multiple of 1/64 beyond fit_end where x P / Q exceeds 1/2 by
    2^-(bits - 4), so that h clamped to [0, 1] is exactly 1 at +clamp and 0 at -clamp."""
    n = 4 * (p_degree + q_degree) + 80
    xs = [fit_end / 2 * (1 + mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n)) for k in range(n)]
    ys = [h(x) - mp.mpf(1) / 2 for x in xs]
    q = [mp.mpf(1)] + [mp.mpf(0)] * q_degree
    for _ in range(iterations):
        rows, rhs = [], []
        for x, y in zip(xs, ys):
            s, w = x * x, 1 / abs(horner(q, x * x))
            rows.append([x * s**j * w for j in range(p_degree + 1)] + [-y * s**j * w for j in range(1, q_degree + 1)])
            rhs.append(y * w)
        A, b = mp.matrix(rows), mp.matrix(rhs)
        sol = mp.lu_solve(A.T * A, A.T * b)
        p = [sol[j] for j in range(p_degree + 1)]
        q = [mp.mpf(1)] + [sol[p_degree + j] for j in range(1, q_degree + 1)]
    p, q = [round_to(c, bits) for c in p], [round_to(c, bits) for c in q]
    odd = lambda x: x * horner(p, x * x) / horner(q, x * x)
    clamp = fit_end
    while odd(clamp) < mp.mpf(1) / 2 + mp.mpf(2) ** (4 - bits):
        clamp += mp.mpf(1) / 64
        assert clamp < fit_end + 2, "the rational does not rise past 1/2 beyond the fit"
    err = max(abs(mp.mpf(1) / 2 + odd(x) - h(x)) for x in (clamp * i / 4000 for i in range(4001)))
    return p, q, err, clamp


def emit_fast():
    """The float pieces (AVX-512), the float rationals (other targets) and the double rational of
    the exact form: the default double tanh kernel already meets the double speed target, so
    fast::gelu keeps it for double (docs/DESIGN.md, "The opt-in")."""
    lines = ["// The opt-in fast kernels (fast_form.hpp): gelu = x h(x), h fitted in absolute error.",
             "struct fast_pieces {"]
    lines.append(constant("clamp", "float", FAST_CLAMP, "|x| beyond this: h is 0 or 1"))
    lines.append(f"  static constexpr int count = {FAST_PIECES};  // of width 2 clamp / count")
    for name, h in (("tanh", h_tanh), ("erf", h_erf)):
        rows, err = fast_pieces(h)
        lines.append(f"  // {name} form: h on piece k = sum c[j][k] (x - mid_k)^j: max error {mp.nstr(err, 3)}")
        items = ",\n".join("{" + ", ".join(literal(c, "float") for c in row) + "}" for row in rows)
        lines.append(f"  alignas(64) static constexpr float {name}[{FAST_DEGREE + 1}][{FAST_PIECES}] = {{{items}}};")
    lines.append("};\n")
    for name, h, kind, bits, degree, fit_end in (("tanh", h_tanh, "float", 24, 5, FAST_CLAMP),
                                                 ("erf", h_erf, "float", 24, 5, FAST_CLAMP),
                                                 ("erf", h_erf, "double", 53, 12, mp.mpf(9))):
        p, q, err, clamp = fast_rational(h, bits, degree, degree, fit_end)
        lines.append(f"// {name} form, {kind}: h = 1/2 + x P(x^2) / Q(x^2), |x| <= clamp: max error {mp.nstr(err, 3)}")
        lines.append(f"struct fast_rational_{name}_{kind} {{")
        lines.append(constant("clamp", kind, clamp, "x P / Q passes 1/2 here"))
        lines.append(table("p", kind, p))
        lines.append(table("q", kind, q))
        lines.append("};\n")
    return "\n".join(lines)


def main():
    print("// Generated by tools/fit_coefficients.py -- do not edit by hand.")
    print("#ifndef EGELU_INTERNAL_COEFFICIENTS_HPP")
    print("#define EGELU_INTERNAL_COEFFICIENTS_HPP\n")
    print("#include <cstdint>\n")
    print("namespace egelu {\nnamespace internal {\n")
    print("template <typename Scalar>\nstruct gelu_coefficients;\n")
    for t in TYPES:
        print(emit_type(t))
    print(emit_float_in_double())
    print(emit_fast())
    print("}  // namespace internal\n}  // namespace egelu\n")
    print("#endif  // EGELU_INTERNAL_COEFFICIENTS_HPP")


if __name__ == "__main__":
    main()
