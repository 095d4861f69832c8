"""Where a function is bound, so that `optimize` can swap it (torchvision's sigmoid focal loss
for ProfileDNN's): module attributes, and what the loss function and the model's forward reach
(closure cells, default arguments, the globals their code names, a partial's keywords, an
object's attributes). A loss built as `lambda out, y: sigmoid_focal_loss(out, y)` inside a
function that imported it holds it in a closure cell, which no module attribute shows.
"""

import functools
import sys
import types

from torch import nn


class Site:
    """One place holding a value: `kind` "attr" (holder.key), "item" (holder[key]), "cell"
    (holder.cell_contents) or "default" (holder.__defaults__[key])."""

    def __init__(self, kind, holder, key=None):
        self.kind, self.holder, self.key = kind, holder, key

    def get(self):
        if self.kind == "attr":
            return getattr(self.holder, self.key)
        if self.kind == "item":
            return self.holder[self.key]
        if self.kind == "cell":
            return self.holder.cell_contents
        return self.holder.__defaults__[self.key]

    def set(self, value):
        if self.kind == "attr":
            setattr(self.holder, self.key, value)
        elif self.kind == "item":
            self.holder[self.key] = value
        elif self.kind == "cell":
            self.holder.cell_contents = value
        else:
            d = list(self.holder.__defaults__)
            d[self.key] = value
            self.holder.__defaults__ = tuple(d)

    def ident(self):
        return (self.kind, id(self.holder), self.key)


def module_sites(target):
    """The attributes of loaded modules (ProfileDNN's own left out) that are `target`."""
    sites = []
    for name, mod in list(sys.modules.items()):
        if mod is None or name.startswith("profilednn"):
            continue
        try:
            sites += [Site("attr", mod, attr) for attr, value in list(vars(mod).items()) if value is target]
        except TypeError:
            continue
    return sites


def _names(code):
    """The global names `code` and the functions defined in it use."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _edges(obj):
    """(site, value) pairs of what `obj` holds and may call."""
    if isinstance(obj, types.MethodType):
        return [(None, obj.__func__), (None, obj.__self__)]
    if isinstance(obj, functools.partial):
        return [(None, obj.func)] + [(None, a) for a in obj.args] + [
            (Site("item", obj.keywords, k), v) for k, v in obj.keywords.items()]
    out = []
    if isinstance(obj, types.FunctionType):
        out += [(Site("cell", c), c.cell_contents) for c in obj.__closure__ or () if _filled(c)]
        out += [(Site("default", obj, i), v) for i, v in enumerate(obj.__defaults__ or ())]
        out += [(Site("item", obj.__kwdefaults__, k), v) for k, v in (obj.__kwdefaults__ or {}).items()]
        g = obj.__globals__
        out += [(Site("item", g, n), g[n]) for n in sorted(_names(obj.__code__)) if n in g]
        return out
    # A module or a callable object: the function its type calls, and its own attributes.
    call = getattr(type(obj), "forward" if isinstance(obj, nn.Module) else "__call__", None)
    if isinstance(call, types.FunctionType) and not call.__module__.startswith("torch."):
        out.append((None, call))
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        out += [(Site("item", attrs, k), v) for k, v in list(attrs.items()) if not k.startswith("_")]
    if isinstance(obj, nn.Module):
        out += [(None, m) for m in obj._modules.values() if m is not None]
    return out


def _filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _followed(value):
    """Whether a value is worth walking into: something callable that code of the user's may
    be (functions, methods, partials, modules, objects of a Python class with `__call__`); not
    an object that cannot even say what it is."""
    try:
        return _callable_kind(value)
    except Exception:  # noqa: BLE001 - isinstance reads __class__, which a proxy may refuse
        return False


def _callable_kind(value):
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial, nn.Module)):
        return True
    return (not isinstance(value, (type, types.ModuleType, types.BuiltinFunctionType))
            and isinstance(getattr(type(value), "__call__", None), types.FunctionType))


def reachable_sites(target, roots, depth=4):
    """The sites holding `target` within `depth` steps of `roots` (objects that cannot be read
    are passed over)."""
    sites, seen = [], set()

    def visit(obj, d):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        try:
            edges = _edges(obj)
        except Exception:  # noqa: BLE001 - an odd object (a proxy, a C type) is not followed
            return
        for site, value in edges:
            if value is target:
                if site is not None:
                    sites.append(site)
            elif d > 0 and _followed(value):
                visit(value, d - 1)

    for r in roots:
        visit(r, depth)
    return sites


def unique(sites):
    out, seen = [], set()
    for s in sites:
        if s.ident() not in seen:
            seen.add(s.ident())
            out.append(s)
    return out
