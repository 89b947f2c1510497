// saxpy.cu: the BLAS level-1 classic, y = a * x + y (float32, contiguous, in place on y).
// Launch: 1-D, 256 threads per block, any grid size: a grid-stride loop covers all n
// elements, so the wrapper can cap the grid and one kernel still handles huge vectors.
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}
