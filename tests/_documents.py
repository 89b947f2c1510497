"""Editing recorded JSON documents (profiles, audits) into broken ones, for the loaders'
error tests."""

from __future__ import annotations


def setter(path: list, value):
    """A change that sets the value at ``path`` (keys and indexes) of a document, or deletes
    it when ``value`` is KeyError."""
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return change
