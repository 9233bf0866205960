"""The evidence-reading method (ViewCraft): the action protocol, the executors that play
``vicogym/Evidence-v0`` episodes, and their traces and replay. Arm-agnostic: the tasks,
their views and renderers live in the arm layers (``*/evidence.py``)."""
