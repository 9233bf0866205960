"""Run in each Ray worker of ``shards_at_scale.py`` before anything else: the toy arm joins the registry."""


def register() -> None:
    import vicogym

    vicogym.register("vicogym/Toy-v0", "toy_arm:ToyEnv", description="test-only arm: count the squares")
