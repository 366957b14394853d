"""The box's root side: the agent's own user, namespaces, tree (an id-mapped overlay or a copy),
private home and ``/tmp``, limits, seccomp, the network wall (:mod:`.net`), and the contract
(:mod:`.contract`) it shares with the helper; it ends by computing the patch (:mod:`.finish`).
:mod:`.userbox` runs the same box without root, inside a user namespace of the runner's user."""
