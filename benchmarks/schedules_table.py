"""One hand-written schedule per bundled PolyBench kernel, for `benchmarks/schedules.py`.

Each schedule is proved legal by the engine (`repoos check KERNEL 'SCHEDULE' --no-measure`)
and was timed against the native baseline (gcc -O3 -march=native, restrict pointers) at
MEDIUM on a 2-core machine. The baseline already vectorizes stride-1 inner loops, so the
wins come from running a dependence-free outer loop on both cores, from making the inner
loop stride-1 (interchange after distribute), and from wavefronts where every loop
carries a dependence (nussinov, seidel-2d). Kernels whose loops are all tied together by
a shared scalar or array (symm's temp2, doitgen's sum, ludcmp's w, deriche's ym1...), and
the small sequential solvers, keep a small legal schedule that runs at about 1x; their
comments say so.
"""

SCHEDULES: dict[str, str] = {
    # datamining
    "correlation": (
        # j of the mean/stddev passes and i of the normalisation carry nothing; the m*m*n product is split off, made
        # k-outer/j-inner (stride-1 rows of data) and its j tiles run on both cores (balanced, unlike the triangular i)
        "parallelize(S1.j); parallelize(S4.j); parallelize(S9.i); distribute(S12, S13); distribute(S13, S14); "
        "interchange(S13.j, k); tile(k, S13.j, 512, 32); interchange(k_t, j_t); parallelize(j_t)"
    ),
    "covariance": (
        # as correlation: cov's k loop goes outside j so data[k, j] is read stride-1, and j tiles share the triangle evenly
        "parallelize(S0.j); parallelize(S3.i); distribute(S4, S5); distribute(S5, S6); interchange(S5.j, k); "
        "tile(k, S5.j, 512, 32); interchange(k_t, j_t); parallelize(j_t)"
    ),
    # linear-algebra/blas
    "gemm": (
        # register tiles: a 4 x 44 block of C stays in registers while k sweeps a 256-row panel of B (in L2);
        # blocks of rows on both cores, as a BLAS micro-kernel does it. 4 x 44 divides LARGE's 1000 x 1100 (no
        # ragged edge, which would run as written) and is the block the heuristic fits to that size
        "distribute(S0, S1); tile(S1.i, S1.k, S1.j, 4, 256, 44); interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); "
        "parallelize(S1.i_t); promote(S1.k)"
    ),
    "gemver": (
        # A's update and w's row products are parallel over i; x's transposed product is made j-outer/i-inner
        # (stride-1 along A's rows) and its i tiles run on both cores
        "parallelize(S0.i); interchange(S1.i, S1.j); tile(S1.i, 200); interchange(S1.j, i_t); parallelize(i_t); parallelize(S3.i)"
    ),
    "gesummv": "distribute(S2, S3); parallelize(i)",  # rows on both cores, one dot product per loop; only ~1x: n=250 is tiny
    "symm": "unroll(k, 4)",  # the scalar temp2 ties every (i, j) together, so nothing reorders or parallelizes; ~1x
    "syr2k": "tile(k, S1.j, 256, 32); interchange(k_t, j_t); parallelize(j_t)",  # as syrk; 1.0-1.3x at MEDIUM
    "syrk": "tile(k, S1.j, 256, 32); interchange(k_t, j_t); parallelize(j_t)",  # j tiles share the triangle evenly; 2x at LARGE
    "trmm": (
        # columns j are independent: j tiles on both cores; inside, k,j order makes B[k, j] stride-1
        "interchange(i, j); tile(j, 60); interchange(j, i); distribute(S0, S1); interchange(S0.j, k); parallelize(j_t)"
    ),
    # linear-algebra/kernels
    "2mm": (
        # each product split off its zeroing (twice: out of j, then out of i), made i,k,j and register-tiled as gemm
        "distribute(S0, S1); distribute(S0, S1); interchange(S1.j, S1.k); tile(S1.i, S1.k, S1.j, 6, 128, 32); "
        "interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); parallelize(S1.i_t); promote(S1.k); "
        "distribute(S2, S3); distribute(S2, S3); interchange(S3.j, S3.k); tile(S3.i, S3.k, S3.j, 6, 128, 32); "
        "interchange(S3.i_t, S3.k_t); interchange(S3.i, S3.k); parallelize(S3.i_t); promote(S3.k)"
    ),
    "3mm": (
        # as 2mm, for each of the three products
        "distribute(S0, S1); distribute(S0, S1); interchange(S1.j, S1.k); tile(S1.i, S1.k, S1.j, 6, 128, 32); "
        "interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); parallelize(S1.i_t); promote(S1.k); "
        "distribute(S2, S3); distribute(S2, S3); interchange(S3.j, S3.k); tile(S3.i, S3.k, S3.j, 6, 128, 32); "
        "interchange(S3.i_t, S3.k_t); interchange(S3.i, S3.k); parallelize(S3.i_t); promote(S3.k); "
        "distribute(S4, S5); distribute(S4, S5); interchange(S5.j, S5.k); tile(S5.i, S5.k, S5.j, 6, 128, 32); "
        "interchange(S5.i_t, S5.k_t); interchange(S5.i, S5.k); parallelize(S5.i_t); promote(S5.k)"
    ),
    "atax": (
        # tmp's row products run over i in parallel; y's accumulation is split off and its j halves run on both cores
        "distribute(S1, S3); parallelize(S1.i); tile(S3.j, 208); interchange(S3.i, j_t); parallelize(j_t)"
    ),
    "bicg": (
        # q's row products are parallel over i; s's column sums are split off and their j tiles run on both cores
        "distribute(S1, S2); distribute(S2, S3); distribute(S2, S3); tile(S2.j, 196); interchange(S2.i, j_t); "
        "parallelize(j_t); parallelize(S3.i)"
    ),
    "doitgen": "distribute(S0, S1); interchange(S1.p, s)",  # s,p order: C4[s, p] stride-1; shared sum[] forbids parallel r, q
    "mvt": (
        # x1 rows in parallel; x2's transposed product made j-outer/i-inner (stride-1) with i tiles on both cores
        "parallelize(S0.i); interchange(S1.i, S1.j); tile(S1.i, 200); interchange(S1.j, i_t); parallelize(i_t)"
    ),
    # linear-algebra/solvers
    "cholesky": "unroll(S0.k, 4)",  # i and j both carry dependences and S2/S3 block any interchange; ~1x
    "durbin": "vectorize(S7.i, 8); vectorize(S8.i, 8)",  # k carries everything; only the two copy loops are vector; ~1x
    "gramschmidt": (
        # per k: split R's zeroing off, i,j order makes A[i, j] stride-1 in both updates, j tiles run on both cores
        "distribute(S4, S5); tile(S5.j, 32); distribute(S5, S6); interchange(S5.j, S5.i); interchange(S6.j, S6.i); "
        "parallelize(S5.j_t)"
    ),
    "lu": "interchange(S2.j, S2.k)",  # k,j order makes A[k, j] stride-1 in the upper part; parallel j tiles measured slower
    "ludcmp": "unroll(S1.k, 4); unroll(S4.k, 4)",  # the scalar w ties every j together, so no interchange is legal; ~1x
    "trisolv": "unroll(j, 4)",  # a forward substitution: i and j both carry dependences; ~1x
    # medley
    "deriche": "vectorize(S29.j, 8); vectorize(S46.j, 8)",  # recursive passes carry scalars; parallel sums measured 0.9x; ~1x
    "floyd-warshall": "tile(j, 32)",  # k, i, j all carry; j strips let gcc's alias check pass so the row update vectorizes
    "nussinov": "skew(i, j, 1); interchange(i, j); parallelize(i)",  # wavefront: cells on one diagonal j-i are independent
    # stencils
    "adi": "parallelize(S13.i); parallelize(S20.i)",  # each sweep's lines i are independent: both cores, inside t
    "fdtd-2d": "parallelize(S1.i); parallelize(S2.i); parallelize(S3.i)",  # within a time step each field update is parallel in i
    "heat-3d": (
        # time tiles: B's and A's sweeps fused plane by plane (A one plane behind), planes skewed against t, and
        # blocks of 16 steps x 32 planes run as a wavefront on both cores; each block reuses its planes 16 times
        "shift(S1.i, 1); fuse(S0, S1, 2); skew(t, S0.i, 2); tile(t, S0.i, 16, 32); skew(t_t, S0.i_t, 1); "
        "interchange(t_t, S0.i_t); parallelize(t_t)"
    ),
    "jacobi-1d": "vectorize(S0.i, 8); vectorize(S1.i, 8)",  # n=400: a fork per sweep costs more than the sweep; ~1x
    "jacobi-2d": (
        # time tiles as heat-3d, with rows for planes; the rows' j loops stay whole and stride-1
        "shift(S1.i, 1); fuse(S0, S1, 2); skew(t, S0.i, 2); tile(t, S0.i, 16, 32); skew(t_t, S0.i_t, 1); "
        "interchange(t_t, S0.i_t); parallelize(t_t)"
    ),
    "seidel-2d": (
        # skew (t, i+t, j+i+2t) makes all distances non-negative, tile, then a wavefront over (t, i) tiles on both cores
        "skew(i, j, 1); skew(t, j, 2); skew(t, i, 1); tile(t, i, j, 8, 32, 128); skew(t_t, i_t, 1); "
        "interchange(t_t, i_t); parallelize(t_t)"
    ),
}
