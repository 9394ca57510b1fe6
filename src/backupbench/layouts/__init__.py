"""Layouts: each kind turns a spec into actions (exact command lists) and their undo.

Nothing here touches a disk: actions are data until the executor runs them, so `plan`
prints exactly what `apply` will do.
"""
