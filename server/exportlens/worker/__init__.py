"""The worker: runs in the user's interpreter, imports only torch and the standard library.

`python -m exportlens.worker` starts a zygote that imports torch once, warms draft_export up,
then forks one fresh child per job (see zygote.py). Nothing here is imported by the server.
"""
