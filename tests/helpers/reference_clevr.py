"""An independent executor of CLEVR programs over scene JSON, for property tests.

It reads only what CLEVR's own question engine reads (``objects``, ``relationships``) from
the stored JSON, and runs the released program spelling (``function``, ``inputs``,
``value_inputs``), recursively and without the package's handlers."""


def run(scene: dict, program: list, index: int | None = None):
    """The output of node ``index`` (the last by default); ``None`` when a ``unique`` fails."""
    index = len(program) - 1 if index is None else index
    node = program[index]
    f, values = node["function"], node["value_inputs"]
    args = [run(scene, program, i) for i in node["inputs"]]
    if any(a is None for a in args):
        return None
    objects = scene["objects"]
    if f == "scene":
        return set(range(len(objects)))
    if f.startswith("filter_"):
        return {i for i in args[0] if objects[i][f[7:]] == values[0]}
    if f == "unique":
        return next(iter(args[0])) if len(args[0]) == 1 else None
    if f == "relate":
        return set(scene["relationships"][values[0]][args[0]])
    if f == "union":
        return args[0] | args[1]
    if f == "intersect":
        return args[0] & args[1]
    if f == "count":
        return len(args[0])
    if f == "exist":
        return "yes" if args[0] else "no"
    if f.startswith("query_"):
        return objects[args[0]][f[6:]]
    if f.startswith("same_"):
        attribute = f[5:]
        return {j for j, o in enumerate(objects) if j != args[0] and o[attribute] == objects[args[0]][attribute]}
    if f.startswith("equal_"):
        return "yes" if args[0] == args[1] else "no"
    if f == "less_than":
        return "yes" if args[0] < args[1] else "no"
    if f == "greater_than":
        return "yes" if args[0] > args[1] else "no"
    raise ValueError(f"unknown function {f!r}")


def answer(scene: dict, program: list):
    value = run(scene, program)
    return None if value is None else str(value)


def relationships(scene: dict) -> dict:
    """CLEVR's rule from the stored coordinates and directions."""
    out = {}
    for rel in ("left", "right", "front", "behind"):
        d = scene["directions"][rel]
        out[rel] = []
        for i, a in enumerate(scene["objects"]):
            related = []
            for j, b in enumerate(scene["objects"]):
                if i != j and sum((b["3d_coords"][k] - a["3d_coords"][k]) * d[k] for k in range(3)) > 0.2:
                    related.append(j)
            out[rel].append(sorted(related))
    return out
