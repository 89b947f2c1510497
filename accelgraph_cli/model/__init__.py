"""GraphModel: nodes, edges, kinds, levels, critical path, and kernel-name demangling.

Pure Python: built from a DOT dump, a JSON model, or a live graph walk, and read by the
diff and render layers.
"""
