"""The project layer: what a project's skills are, where they come from and where they go.

``agents`` knows the agents that read skills from disk and the folders each reads;
``install`` writes skills into those folders, each with skillctl's marker, and plans and
applies ``sync`` over them.
"""
