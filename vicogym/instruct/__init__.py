"""The VISA method: instruction synthesis with verifiable constraints (``synthesis``), its
models (``models``: writer, target, composer, embedder, perceiver), its SQLite memory
(``memory``), the LLM-judge track (``judge``), admitting model-proposed constraint types
(``discovery``) and what a run folder gives back (``run_folder``). The constraint types
themselves are arm layers: ``programs/instruct``, ``editors/instruct``, ``sources/instruct``."""
