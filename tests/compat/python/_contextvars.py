"""A stand-in for CPython's _contextvars for the compatibility suite.

The static interpreter (libpython3.11.a) has no _contextvars, and without
it `contextvars`, `decimal` and, through them, test.support's imports
fail, so most regression modules would not start on either side. This
gives both sides the same small pure-Python version: one context per
thread, ContextVar get/set/reset, Token, copy_context and Context.run.
It is part of the harness, not of what is measured: keep and native run
it alike.
"""
import _thread

__all__ = ("Context", "ContextVar", "Token", "copy_context")

_MISSING = object()
_contexts = {}


def _current():
    ident = _thread.get_ident()
    ctx = _contexts.get(ident)
    if ctx is None:
        ctx = _contexts[ident] = Context()
    return ctx


class Context:
    def __init__(self):
        self._data = {}
        self._entered = False

    def run(self, callable, /, *args, **kwargs):
        if self._entered:
            raise RuntimeError(f"cannot enter context: {self} is already entered")
        ident = _thread.get_ident()
        prev = _current()
        _contexts[ident] = self
        self._entered = True
        try:
            return callable(*args, **kwargs)
        finally:
            self._entered = False
            _contexts[ident] = prev

    def copy(self):
        new = Context()
        new._data = dict(self._data)
        return new

    def __getitem__(self, var):
        if not isinstance(var, ContextVar):
            raise TypeError(f"a ContextVar key was expected, got {var!r}")
        return self._data[var]

    def get(self, var, default=None):
        return self._data.get(var, default)

    def __contains__(self, var):
        return var in self._data

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def keys(self):
        return self._data.keys()

    def values(self):
        return self._data.values()

    def items(self):
        return self._data.items()


class Token:
    MISSING = _MISSING

    def __init__(self, context, var, old_value):
        self._context = context
        self._var = var
        self._old_value = old_value
        self._used = False

    @property
    def var(self):
        return self._var

    @property
    def old_value(self):
        return self._old_value


class ContextVar:
    def __init__(self, name, *, default=_MISSING):
        if not isinstance(name, str):
            raise TypeError("context variable name must be a str")
        self._name = name
        self._default = default

    def __class_getitem__(cls, item):
        return cls

    @property
    def name(self):
        return self._name

    def get(self, *args):
        ctx = _current()
        if self in ctx._data:
            return ctx._data[self]
        if args:
            return args[0]
        if self._default is not _MISSING:
            return self._default
        raise LookupError(self)

    def set(self, value):
        ctx = _current()
        old = ctx._data.get(self, _MISSING)
        ctx._data[self] = value
        return Token(ctx, self, old)

    def reset(self, token):
        if not isinstance(token, Token):
            raise TypeError(f"expected an instance of Token, got {token!r}")
        if token._used:
            raise RuntimeError(f"{token!r} has already been used once")
        if token._var is not self:
            raise ValueError(f"{token!r} was created by a different ContextVar")
        ctx = _current()
        if token._context is not ctx:
            raise ValueError(f"{token!r} was created in a different Context")
        token._used = True
        if token._old_value is _MISSING:
            ctx._data.pop(self, None)
        else:
            ctx._data[self] = token._old_value

    def __repr__(self):
        return f"<ContextVar name={self._name!r} at 0x{id(self):x}>"


def copy_context():
    return _current().copy()
