"""Everything that touches CUDA: Graph on CuPy streams, memory pools, the live node walk,
timing with CUDA events, and kernel loading.

The only layer that imports CuPy or cuda.bindings (lazily, inside functions: importing these
modules never loads CuPy). A torch backend goes in ``cuda/torch/`` and CUPTI profiling in
``cuda/cupti/``, beside the CuPy modules they share the driver walk with.
"""
