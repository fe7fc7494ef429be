"""The language server: only this package knows LSP (pygls, lsprotocol).

`server` wires the features; each feature module (runs, actions, hover, progress, settings,
textmap) gets the small `host.Host` contract it needs, never the server module itself.
"""
