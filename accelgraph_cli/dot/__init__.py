"""CUDA's DOT dialect: the fast parser (dumps to GraphModel) and Graphviz drawing."""
