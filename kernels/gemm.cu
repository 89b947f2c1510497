// gemm.cu: the kernels a transformer MLP needs, float32 in and out (no reduced precision),
// row-major and contiguous. No atomics anywhere: every launch with the same inputs produces
// the same bits, so eager steps and graph replays agree exactly.
//
// kernels.sgemm dispatches by shape (accelgraph_cli/cuda/kernels.py):
//   M <= 64 (decode batches)   sgemm_skinny_MT: a GEMV-style split-K kernel that streams the
//                              weights at memory bandwidth, + sgemm_splitk_reduce when K is split
//                              (either applies kernels.sgemm_bias_gelu's bias + GELU as it
//                              writes C), or softmax.cu's sgemm_splitk_reduce_softmax for
//                              kernels.sgemm_softmax (C and its row-wise softmax)
//   larger M                   sgemm_128x128: a register-blocked tiled kernel (8x8 per thread)
//   anything not 16-byte       sgemm_tiled: the plain 16x16 shared-memory kernel
//   aligned or N, K % 4 != 0

// Every kernel in this file begins with WAIT_FOR_PRIOR_GRID(). Under capture, accelgraph
// launches such kernels with programmatic dependencies (accelgraph_cli/cuda/launch.py), so
// one may start while the kernel before it is still finishing: the wait holds each thread
// until that kernel has completed and its writes are visible. Launched any other way, it
// returns at once.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WAIT_FOR_PRIOR_GRID() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define WAIT_FOR_PRIOR_GRID() ((void)0)
#endif

#define GEMM_TILE 16

// GELU, tanh approximation (as GPT-2 / torch approximate="tanh"):
//   gelu(v) = 0.5 * v * (1 + tanh(sqrt(2/pi) * (v + 0.044715 * v^3)))
static __device__ __forceinline__ float gelu_tanh(float v)
{
    const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
    const float k1 = 0.044715f;
    return 0.5f * v * (1.0f + tanhf(k0 * (v + k1 * v * v * v)));
}

// What a GEMM writes to C for the sum s of an element: alpha * s + beta * C (BLAS; beta == 0
// ignores C), then, given a bias, gelu_tanh(that + bias[col]) rounded as bias_gelu rounds it
// (the add is not fused into the multiply), so sgemm_bias_gelu gives the bits of sgemm
// followed by bias_gelu.
static __device__ __forceinline__ float gemm_out(float s, const float* C, long long idx,
                                                const float* bias, int col, float alpha,
                                                float beta)
{
    float v = (beta == 0.0f) ? alpha * s : alpha * s + beta * C[idx];
    if (bias != nullptr) v = gelu_tanh(__fadd_rn(v, bias[col]));
    return v;
}

// sgemm_tiled: C = alpha * A @ B + beta * C, with A (M x K), B (K x N), C (M x N).
// Algorithm: classic shared-memory tiling. Each block owns a GEMM_TILE x GEMM_TILE tile of C;
// it walks K in steps of GEMM_TILE, staging one tile of A and one of B in shared memory
// (zero-padded past the matrix edges, so any M, N, K works), and each thread accumulates
// one element of C. The K loop order is fixed, so the result of a row does not depend on M.
// Launch: block (GEMM_TILE, GEMM_TILE), grid (ceil(N / GEMM_TILE), ceil(M / GEMM_TILE)).
// beta == 0 ignores C's old contents (BLAS semantics), so C may be uninitialized memory.
extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C,
                                       int M, int N, int K, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    __shared__ float a_tile[GEMM_TILE][GEMM_TILE];
    __shared__ float b_tile[GEMM_TILE][GEMM_TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * GEMM_TILE + ty;
    const int col = blockIdx.x * GEMM_TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += GEMM_TILE) {
        const int a_col = k0 + tx;
        const int b_row = k0 + ty;
        a_tile[ty][tx] = (row < M && a_col < K) ? A[(long long)row * K + a_col] : 0.0f;
        b_tile[ty][tx] = (b_row < K && col < N) ? B[(long long)b_row * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < GEMM_TILE; ++k) {
            acc += a_tile[ty][k] * b_tile[k][tx];
        }
        __syncthreads();  // the tiles are overwritten by the next iteration
    }

    if (row < M && col < N) {
        const long long idx = (long long)row * N + col;
        C[idx] = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * C[idx];
    }
}

// ---------------------------------------------------------------------------------------------
// Skinny GEMM (decode shapes: M <= 64 rows, K and N in the thousands). The cost is reading B
// (K x N floats) once; the kernel is built to keep enough loads in flight to do that at the
// card's memory bandwidth.
//
// Block: 256 threads = 8 warps. A block owns SK_COLS = 128 columns of C (each lane 4
// consecutive columns, read as one float4 of a row of B: a warp reads 512 contiguous bytes)
// and MT rows of C, and one slice of K (split-K across blockIdx.z). In each step of its slice
// a warp takes SK_ROWS consecutive rows of B. For MT = 1 or 2 (this body) the next step's
// rows are loaded before the current ones are used (software pipelining), A's values come
// through the read-only cache (the whole warp reads the same one: a broadcast), and there is
// no barrier inside the loop; larger MT stage A in shared memory (the staged body below). The 8 warps'
// partial sums are then added in warp order through shared memory. With one slice the block
// writes C = alpha * sum + beta * C (with bias + GELU when given a bias: gemm_out); with
// several, it writes its partial sums to a workspace (S x M x N) and sgemm_splitk_reduce adds
// the slices in slice order.
//
// Every row of C is computed by the same sequence of float operations whatever M and MT are
// (rows never mix), and the slicing depends only on N and K: a row's result does not depend
// on how many rows the batch has. kslice must be a multiple of 8 * SK_ROWS = 64.
// Launch: block 256, grid (ceil(M / MT), ceil(N / 128), S).
#define SK_THREADS 256
#define SK_COLS 128

template <int U>
__device__ __forceinline__ void skinny_load_b(float4 (&b)[U], const float* __restrict__ B,
                                              int k, int k_end, int N, int col, bool vec)
{
#pragma unroll
    for (int u = 0; u < U; ++u) {
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (k + u < k_end && col < N) {
            const float* row = B + (long long)(k + u) * N + col;
            if (vec) {
                v = __ldg(reinterpret_cast<const float4*>(row));
            } else {
                v.x = __ldg(row);
                if (col + 1 < N) v.y = __ldg(row + 1);
                if (col + 2 < N) v.z = __ldg(row + 2);
                if (col + 3 < N) v.w = __ldg(row + 3);
            }
        }
        b[u] = v;
    }
}

#define SK_ROWS 8  // rows of B a warp takes per step: fixed, so the summation order is too

// The block's result: the 8 warps' sums added in warp order (through shared memory, 4 rows at
// a time), then written to C (one slice) or to the slice's part of the workspace.
template <int MT>
__device__ __forceinline__ void skinny_finish(float (&acc)[MT][4], float (&red)[8][4][SK_COLS],
                                              float* __restrict__ C, float* __restrict__ partial,
                                              const float* __restrict__ bias, int M, int N,
                                              int m0, float alpha, float beta)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int m4 = 0; m4 < MT; m4 += 4) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            if (m4 + r < MT) {
                *reinterpret_cast<float4*>(&red[warp][r][lane * 4]) =
                    make_float4(acc[m4 + r][0], acc[m4 + r][1], acc[m4 + r][2], acc[m4 + r][3]);
            }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < 4 * SK_COLS; i += SK_THREADS) {
            const int r = i / SK_COLS;
            const int c = i - r * SK_COLS;
            const int gm = m0 + m4 + r;
            const int gc = blockIdx.y * SK_COLS + c;
            if (m4 + r < MT && gm < M && gc < N) {
                float s = red[0][r][c];
#pragma unroll
                for (int w = 1; w < 8; ++w) s += red[w][r][c];
                if (partial != nullptr) {
                    partial[((long long)blockIdx.z * M + gm) * N + gc] = s;
                } else {
                    const long long idx = (long long)gm * N + gc;
                    C[idx] = gemm_out(s, C, idx, bias, gc, alpha, beta);
                }
            }
        }
        __syncthreads();
    }
}

template <int MT>
__device__ __forceinline__ void sgemm_skinny_body(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    float* __restrict__ partial, const float* __restrict__ bias, int M, int N, int K, int kslice,
    float alpha, float beta)
{
    __shared__ __align__(16) float red[8][4][SK_COLS];  // the warps' sums, 4 rows at a time

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int m0 = blockIdx.x * MT;
    const int col = blockIdx.y * SK_COLS + lane * 4;
    const int k_begin = blockIdx.z * kslice;
    const int k_end = min(K, k_begin + kslice);
    const bool vec = ((N & 3) == 0) && ((((unsigned long long)B) & 15) == 0);
    const bool a_vec = ((K & 3) == 0) && ((((unsigned long long)A) & 15) == 0);
    constexpr int U = SK_ROWS;
    const int step = 8 * U;

    float acc[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
        acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
    }

    int k = k_begin + warp * U;
    float4 b[U];
    skinny_load_b<U>(b, B, k, k_end, N, col, vec);
    for (; k < k_end; k += step) {
        float4 next[U];
        skinny_load_b<U>(next, B, k + step, k_end, N, col, vec);
        const bool whole = a_vec && k + U <= k_end;
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            const int gm = m0 + m;
            float a[U];
            if (gm < M && whole) {
                const float* arow = A + (long long)gm * K + k;
#pragma unroll
                for (int q = 0; q < U; q += 4) {
                    const float4 v = __ldg(reinterpret_cast<const float4*>(arow + q));
                    a[q] = v.x;
                    a[q + 1] = v.y;
                    a[q + 2] = v.z;
                    a[q + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    a[u] = (gm < M && k + u < k_end) ? __ldg(A + (long long)gm * K + k + u) : 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                acc[m][0] = fmaf(a[u], b[u].x, acc[m][0]);
                acc[m][1] = fmaf(a[u], b[u].y, acc[m][1]);
                acc[m][2] = fmaf(a[u], b[u].z, acc[m][2]);
                acc[m][3] = fmaf(a[u], b[u].w, acc[m][3]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) b[u] = next[u];
    }

    skinny_finish<MT>(acc, red, C, partial, bias, M, N, m0, alpha, beta);
}

// The same computation for MT >= 4, where reading A through the cache for every row would
// cost more than B: A is staged in shared memory, transposed ([k][m]), in one of two ways.
//  - Whole slice (when the launch gives MT * kslice floats of dynamic shared memory, which
//    kernels.sgemm does up to a limit): A's MT x kslice values are staged once, then the loop
//    over B is the pipelined one of sgemm_skinny_body (the next step's rows of B are loaded
//    before the current ones are used) with no barrier inside it. The first rows of B are
//    requested before A is staged, so the two latencies overlap.
//  - Chunk by chunk (no dynamic shared memory: always for MT = 16, and where the device has
//    no room for the whole slice with two blocks per SM): each 64-row chunk of the slice
//    stages A's MT x 64 values (one barrier), then warp w multiplies rows 8w .. 8w+7 of the
//    chunk.
// Either way each row of C sees the same operations in the same order as in
// sgemm_skinny_body (step by step, warp w's 8 rows in order, then the warps in order), so
// all the skinny kernels agree bit for bit.
template <int MT>
__device__ __forceinline__ void sgemm_skinny_staged_body(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    float* __restrict__ partial, const float* __restrict__ bias, int M, int N, int K, int kslice,
    float alpha, float beta)
{
    extern __shared__ __align__(16) float a_slice[];  // [kslice][MT], whole-slice path only
    __shared__ __align__(16) float a_chunk[8 * SK_ROWS][MT];  // [k][m], chunk path
    __shared__ __align__(16) float red[8][4][SK_COLS];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int m0 = blockIdx.x * MT;
    const int col = blockIdx.y * SK_COLS + lane * 4;
    const int k_begin = blockIdx.z * kslice;
    const int k_end = min(K, k_begin + kslice);
    const bool vec = ((N & 3) == 0) && ((((unsigned long long)B) & 15) == 0);
    constexpr int U = SK_ROWS;
    constexpr int CHUNK = 8 * SK_ROWS;
    unsigned dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));

    float acc[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
        acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
    }
    // (MT <= 8: kernels.sgemm stages whole slices only for those; for larger MT the branch
    // is compiled out, so its registers do not weigh on the chunk path)
    if (MT <= 8 && (long long)MT * kslice * 4 <= (long long)dynamic_bytes) {
        int k = k_begin + warp * U;
        float4 b[U];
        skinny_load_b<U>(b, B, k, k_end, N, col, vec);
        const int klen = k_end - k_begin;
        for (int i = threadIdx.x; i < MT * kslice; i += SK_THREADS) {
            const int m = i / kslice;
            const int kk = i - m * kslice;  // consecutive threads read along a row of A
            const int gm = m0 + m;
            a_slice[kk * MT + m] =
                (gm < M && kk < klen) ? __ldg(A + (long long)gm * K + k_begin + kk) : 0.0f;
        }
        __syncthreads();
        for (; k < k_end; k += CHUNK) {
            float4 next[U];
            skinny_load_b<U>(next, B, k + CHUNK, k_end, N, col, vec);
            const float* a_rows = a_slice + (k - k_begin) * MT;
#pragma unroll
            for (int u = 0; u < U; ++u) {
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    const float a = a_rows[u * MT + m];
                    acc[m][0] = fmaf(a, b[u].x, acc[m][0]);
                    acc[m][1] = fmaf(a, b[u].y, acc[m][1]);
                    acc[m][2] = fmaf(a, b[u].z, acc[m][2]);
                    acc[m][3] = fmaf(a, b[u].w, acc[m][3]);
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) b[u] = next[u];
        }
    } else {
        for (int kc = k_begin; kc < k_end; kc += CHUNK) {
            for (int i = threadIdx.x; i < MT * CHUNK; i += SK_THREADS) {
                const int m = i / CHUNK;
                const int kk = i - m * CHUNK;
                const int gm = m0 + m;
                a_chunk[kk][m] =
                    (gm < M && kc + kk < k_end) ? A[(long long)gm * K + kc + kk] : 0.0f;
            }
            __syncthreads();
            // A warp whose rows all lie past the slice's end does no work, as in the other
            // paths (their loop stops at k_end): adding fmaf(0, 0, acc) would turn a sum of
            // -0.0 into +0.0, and a row's bits would depend on which kernel the batch got.
            if (kc + warp * U < k_end) {
                float4 b[U];
                skinny_load_b<U>(b, B, kc + warp * U, k_end, N, col, vec);
#pragma unroll
                for (int u = 0; u < U; ++u) {
#pragma unroll
                    for (int m = 0; m < MT; ++m) {
                        const float a = a_chunk[warp * U + u][m];
                        acc[m][0] = fmaf(a, b[u].x, acc[m][0]);
                        acc[m][1] = fmaf(a, b[u].y, acc[m][1]);
                        acc[m][2] = fmaf(a, b[u].z, acc[m][2]);
                        acc[m][3] = fmaf(a, b[u].w, acc[m][3]);
                    }
                }
            }
            __syncthreads();  // a_chunk is refilled by the next chunk
        }
    }
    skinny_finish<MT>(acc, red, C, partial, bias, M, N, m0, alpha, beta);
}

// One kernel per rows-per-block (MT); kernels.sgemm picks the smallest that holds M.
extern "C" __global__ void __launch_bounds__(SK_THREADS, 2) sgemm_skinny_1(
    const float* A, const float* B, float* C, float* partial, const float* bias, int M, int N,
    int K, int kslice, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    sgemm_skinny_body<1>(A, B, C, partial, bias, M, N, K, kslice, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SK_THREADS, 2) sgemm_skinny_2(
    const float* A, const float* B, float* C, float* partial, const float* bias, int M, int N,
    int K, int kslice, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    sgemm_skinny_body<2>(A, B, C, partial, bias, M, N, K, kslice, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SK_THREADS, 2) sgemm_skinny_4(
    const float* A, const float* B, float* C, float* partial, const float* bias, int M, int N,
    int K, int kslice, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    sgemm_skinny_staged_body<4>(A, B, C, partial, bias, M, N, K, kslice, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SK_THREADS, 2) sgemm_skinny_8(
    const float* A, const float* B, float* C, float* partial, const float* bias, int M, int N,
    int K, int kslice, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    sgemm_skinny_staged_body<8>(A, B, C, partial, bias, M, N, K, kslice, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SK_THREADS, 2) sgemm_skinny_16(
    const float* A, const float* B, float* C, float* partial, const float* bias, int M, int N,
    int K, int kslice, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    sgemm_skinny_staged_body<16>(A, B, C, partial, bias, M, N, K, kslice, alpha, beta);
}

// sgemm_splitk_reduce: C = alpha * (partial[0] + partial[1] + ... + partial[S-1]) + beta * C,
// element-wise over the M x N outputs, the slices added in slice order (deterministic, and
// the order depends on S only, so a row's result does not depend on M), then bias + GELU
// when given a bias (gemm_out; bias holds N floats). Up to 16 slices' loads are in flight
// before they are added. Launch: 1-D, 256 threads per block, ceil(M * N / 256) blocks.
// softmax.cu's sgemm_splitk_reduce_softmax adds the slices as this does, for the same bits
// (kernels.sgemm_softmax): keep the two alike.
extern "C" __global__ void __launch_bounds__(256) sgemm_splitk_reduce(
    const float* __restrict__ partial, float* __restrict__ C, const float* __restrict__ bias,
    int mn, int n, int S, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= mn) return;
    const float* p = partial + i;
    float s = p[0];
    for (int z0 = 1; z0 < S; z0 += 16) {
        float v[16];
#pragma unroll
        for (int q = 0; q < 16; ++q) v[q] = (z0 + q < S) ? p[(long long)(z0 + q) * mn] : 0.0f;
#pragma unroll
        for (int q = 0; q < 16; ++q) {
            if (z0 + q < S) s += v[q];
        }
    }
    C[i] = gemm_out(s, C, i, bias, (int)(i % n), alpha, beta);
}

// ---------------------------------------------------------------------------------------------
// sgemm_128x128: C = alpha * A @ B + beta * C for larger M. Each block of 256 threads owns a
// 128 x 128 tile of C and walks K in steps of 8, double-buffered in shared memory (the next
// step's tiles are read from global memory into registers while the current ones are used).
// Each thread accumulates an 8 x 8 sub-tile (rows ty*4..+3 and 64+ty*4..+3, columns tx*4..+3
// and 64+tx*4..+3: float4 shared-memory reads without bank conflicts), in k order: a fixed
// summation order, so results are deterministic and a row's result does not depend on M.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C (the wrapper checks; otherwise it
// uses sgemm_tiled). Launch: block 256, grid (ceil(N / 128), ceil(M / 128)).
#define BIG_BM 128
#define BIG_BN 128
#define BIG_BK 8

extern "C" __global__ void __launch_bounds__(256) sgemm_128x128(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, float alpha, float beta)
{
    WAIT_FOR_PRIOR_GRID();
    __shared__ __align__(16) float as[2][BIG_BK][BIG_BM];  // A tile, transposed: as[k][m]
    __shared__ __align__(16) float bs[2][BIG_BK][BIG_BN];

    const int tid = threadIdx.x;
    const int bm = blockIdx.y * BIG_BM;
    const int bn = blockIdx.x * BIG_BN;
    const int a_row = tid >> 1;         // 0..127: the row of A this thread loads
    const int a_k = (tid & 1) * 4;      // 0 or 4: which float4 of the 8-wide k step
    const int b_k = tid >> 5;           // 0..7
    const int b_col = (tid & 31) * 4;   // 0..124
    const bool a_in = bm + a_row < M;
    const bool b_in = bn + b_col < N;
    const float* a_src = A + (long long)(bm + a_row) * K + a_k;
    const float* b_src = B + (long long)b_k * N + bn + b_col;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float4 a_next = (a_in && a_k < K) ? *reinterpret_cast<const float4*>(a_src) : zero;
    float4 b_next = (b_in && b_k < K) ? *reinterpret_cast<const float4*>(b_src) : zero;
    as[0][a_k + 0][a_row] = a_next.x;
    as[0][a_k + 1][a_row] = a_next.y;
    as[0][a_k + 2][a_row] = a_next.z;
    as[0][a_k + 3][a_row] = a_next.w;
    *reinterpret_cast<float4*>(&bs[0][b_k][b_col]) = b_next;
    __syncthreads();

    const int tx = tid & 15;
    const int ty = tid >> 4;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BIG_BK) {
        const bool more = k0 + BIG_BK < K;
        if (more) {
            const int ka = k0 + BIG_BK + a_k;
            const int kb = k0 + BIG_BK + b_k;
            a_next = (a_in && ka < K) ? *reinterpret_cast<const float4*>(a_src + k0 + BIG_BK)
                                      : zero;
            b_next = (b_in && kb < K)
                         ? *reinterpret_cast<const float4*>(b_src + (long long)(k0 + BIG_BK) * N)
                         : zero;
        }
#pragma unroll
        for (int kk = 0; kk < BIG_BK; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(&as[buf][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&as[buf][kk][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&bs[buf][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&bs[buf][kk][64 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            const int nb = buf ^ 1;
            as[nb][a_k + 0][a_row] = a_next.x;
            as[nb][a_k + 1][a_row] = a_next.y;
            as[nb][a_k + 2][a_row] = a_next.z;
            as[nb][a_k + 3][a_row] = a_next.w;
            *reinterpret_cast<float4*>(&bs[nb][b_k][b_col]) = b_next;
        }
        __syncthreads();
        buf ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (row >= M) continue;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int col = bn + half * 64 + tx * 4;
            if (col >= N) continue;  // N % 4 == 0: the four columns are all in or all out
            float* dst = C + (long long)row * N + col;
            float4 v = make_float4(alpha * acc[i][half * 4 + 0], alpha * acc[i][half * 4 + 1],
                                   alpha * acc[i][half * 4 + 2], alpha * acc[i][half * 4 + 3]);
            if (beta != 0.0f) {
                const float4 old = *reinterpret_cast<const float4*>(dst);
                v.x += beta * old.x;
                v.y += beta * old.y;
                v.z += beta * old.z;
                v.w += beta * old.w;
            }
            *reinterpret_cast<float4*>(dst) = v;
        }
    }
}

// bias_gelu: y[r, c] = gelu(x[r, c] + bias[c]) for a (rows x cols) matrix, the epilogue of
// the MLP's first GEMM (gelu_tanh above). y may alias x (in place). Launch: 1-D, 256 threads
// per block, ceil(rows*cols / 256) blocks, one element per thread.

extern "C" __global__ void bias_gelu(const float* x, const float* bias, float* y,
                                     int rows, int cols)
{
    WAIT_FOR_PRIOR_GRID();
    const long long n = (long long)rows * cols;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = gelu_tanh(x[i] + bias[i % cols]);
}

// bias_gelu4: the same, four elements per thread through float4 (cols % 4 == 0, x, bias and
// y 16-byte aligned: the wrapper checks). Launch: 1-D, 256 threads, ceil(rows*cols/4/256) blocks.
extern "C" __global__ void bias_gelu4(const float4* x, const float4* bias, float4* y,
                                      int rows, int cols)
{
    WAIT_FOR_PRIOR_GRID();
    const int n4 = rows * (cols / 4);  // the wrapper keeps rows * cols within int32
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const float4 v = x[i];
    const float4 b = bias[i % (cols / 4)];
    y[i] = make_float4(gelu_tanh(v.x + b.x), gelu_tanh(v.y + b.y), gelu_tanh(v.z + b.z),
                       gelu_tanh(v.w + b.w));
}
