// elementwise.cu: tiny element-wise kernels; their launch cost dwarfs their work, which is
// exactly the regime CUDA graphs are for. float32, contiguous. Launch: 1-D, 256 threads per
// block, ceil(n / 256) blocks, one element per thread.

// add_mod1: x = frac(x + c), in place. A rotation on [0, 1): values stay bounded however many
// times it runs (a chain of thousands of launches, replayed thousands of times, never
// overflows or converges), and floorf is exact, so NumPy reproduces it bit for bit.
extern "C" __global__ void add_mod1(float* x, float c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i] + c;
    x[i] = v - floorf(v);
}

// axpby: out = a * x + b * y. out may alias x or y (each thread reads before it writes
// its own element), which makes it an in-place accumulate: axpby(1, out, 1, t, out).
extern "C" __global__ void axpby(float a, const float* x, float b, const float* y,
                                 float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = a * x[i] + b * y[i];
}
