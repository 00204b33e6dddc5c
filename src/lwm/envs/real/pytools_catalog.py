"""Real Python APIs as tools: each public function of a module, or each method of one live object, with a
JSON schema written from its signature and its docstring as the description.

This is where the tool corpus of lwm-mini v5 comes from (``lwm.envs.real.pytools`` serves a group over MCP): many
real tools a world model has never seen, whose results are what the real code returns, so a model can learn to go
from a tool's schema and description to its result instead of remembering tools. A **group** is one module's
functions (``statistics``, ``textwrap``, ``numpy``) or one stateful object's methods (a queue, a key-value
store, a calendar, a graph): the unit a session exposes and the unit an evaluation holds out, by ``package``.

A schema says what the signature says: annotations where the code has them, a default's type, else the
parameter's name (``iterable``, ``text``, ``n``), and the calls written in the docstring (``>>> median([1, 3,
5])``) as ``examples``, the JSON Schema keyword an explorer reads.
"""

from __future__ import annotations

import ast
import collections
import importlib
import inspect
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

SKIP_NAME = re.compile(r"^_|open|remove|unlink|rmdir|mkdir|chmod|chown|kill|fork|exec|system|spawn|exit|sleep|"
                       r"input|getpass|socket|connect|urlopen|mainloop|interact|setrecursionlimit|settrace|"
                       r"register|install|load_library|seterr|set_printoptions|show_config|info$", re.IGNORECASE)
"""Functions that touch the world outside the call (files, processes, the network, the interpreter) or wait."""
INTEGER_NAMES = frozenset("n k i j m r count size width depth indent start stop end step index pos ndigits precision "
                          "maxsplit length num number times year month day hour minute second weeks days base exp "
                          "bits level limit maxlen firstweekday tabsize lineno port w l c cols rows column row "
                          "max_width maxsize nbytes offset shift digits places seed".split())
NUMBER_NAMES = frozenset("x y z a b value val p q angle radius degrees radians mu sigma alpha beta weight rate "
                         "rel_tol abs_tol lo hi low high t h amount price total scale factor fraction "
                         "numerator denominator real imag".split())
ARRAY_NAMES = frozenset("iterable data seq sequence values items numbers nums population weights list iterables "
                        "elements array arr xs ys vector coordinates args arrays a_list lst keys words "
                        "lines pool".split())
OBJECT_NAMES = frozenset("mapping d dict dictionary kwargs attrs headers".split())
TYPES = {int: "integer", float: "number", complex: "number", str: "string", bool: "boolean", list: "array",
         tuple: "array", set: "array", frozenset: "array", dict: "object", bytes: "string", bytearray: "string"}
DESCRIPTION_CHARS = 600


@dataclass(frozen=True)
class PyTool:
    """One callable as a tool: its MCP listing (``name``, ``description``, ``inputSchema``) and the call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    call: Callable[..., Any]
    signature: inspect.Signature
    qualname: str
    """Where the code lives, e.g. ``statistics.median`` or ``collections.deque.append``."""

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass(frozen=True)
class Group:
    """A session's tools: a module's functions, or the methods of one object ``make`` builds for the session."""

    name: str
    package: str
    """The top-level package whose code answers (held out as a whole in an evaluation)."""
    module: str
    make: Callable[[], Any] | None = None
    about: str = ""
    part: tuple[int, int] | None = None
    """(k, n): the k-th of n slices of the module's tools, for modules with hundreds (a session lists its tools
    in the world model's prompt, and ~40 is what real servers list)."""

    def tools(self) -> list[PyTool]:
        with warnings.catch_warnings():  # reading a deprecated attribute warns; the tool list is the same
            warnings.simplefilter("ignore")
            tools = self._tools()
        if self.part is None:
            return tools
        k, n = self.part
        size = -(-len(tools) // n)
        return tools[(k - 1) * size:k * size]

    def _tools(self) -> list[PyTool]:
        if self.make is None:
            target = importlib.import_module(self.module)
            public = getattr(target, "__all__", None)
            names = [n for n in (public if public is not None else dir(target)) if not n.startswith("_")]
            found = ((n, getattr(target, n, None)) for n in names)
            candidates = [(n, f) for n, f in found if callable(f) and not inspect.isclass(f)
                          and getattr(f, "__module__", self.module) is not None]
            prefix = self.module
        else:
            target = self.make()
            candidates = [(n, getattr(target, n)) for n in dir(target)
                          if not n.startswith("_") and callable(getattr(target, n, None))]
            prefix = f"{type(target).__module__}.{type(target).__qualname__}"
        found_tools = (as_tool(name, function, f"{prefix}.{name}") for name, function in sorted(candidates)
                       if not SKIP_NAME.search(name))
        return [tool for tool in found_tools if tool is not None]


def _type_of(annotation: Any) -> dict[str, Any] | None:
    """A JSON schema for an annotation where one is plain (int, str, list[int], X | None), else None."""
    if annotation is inspect.Parameter.empty or isinstance(annotation, str):
        return None
    origin = get_origin(annotation)
    if origin is not None and type(None) in get_args(annotation):  # Optional[X], X | None
        inner = [a for a in get_args(annotation) if a is not type(None)]
        found = _type_of(inner[0]) if len(inner) == 1 else None
        return {**found, "type": [found["type"], "null"]} if found and isinstance(found.get("type"), str) else None
    base = origin or annotation
    if base in TYPES:
        schema: dict[str, Any] = {"type": TYPES[base]}
        args = get_args(annotation)
        if TYPES[base] == "array" and args and (item := _type_of(args[0])):
            schema["items"] = item
        return schema
    if isinstance(base, type) and issubclass(base, Mapping):
        return {"type": "object"}
    if isinstance(base, type) and base is not str and issubclass(base, Iterable):
        return {"type": "array", "items": {"type": "number"}}
    return None


def _type_by_name(name: str) -> dict[str, Any]:
    plain = name.lower().strip("_")
    if plain in ARRAY_NAMES or plain.endswith("s") and plain[:-1] in NUMBER_NAMES | INTEGER_NAMES:
        return {"type": "array", "items": {"type": "number"}}
    if plain in INTEGER_NAMES or plain.startswith(("n_", "num_", "max_", "min_")):
        return {"type": "integer"}
    if plain in NUMBER_NAMES:
        return {"type": "number"}
    if plain in OBJECT_NAMES:
        return {"type": "object"}
    if plain.startswith(("is_", "ignore", "strict", "reverse", "keep", "allow", "use_", "skip", "case")):
        return {"type": "boolean"}
    return {"type": "string"}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str)) or (
        isinstance(value, (list, tuple)) and all(_jsonable(v) for v in value))


def param_schema(param: inspect.Parameter) -> dict[str, Any]:
    """A parameter's schema: its annotation, else its default's type, else what its name says."""
    schema = _type_of(param.annotation)
    default = param.default
    if schema is None and default is not inspect.Parameter.empty and default is not None and type(default) in TYPES:
        schema = {"type": TYPES[type(default)]}
    if schema is None:
        schema = _type_by_name(param.name)
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        return {"type": "array", "items": schema if schema.get("type") != "array" else {"type": "number"}}
    if default is not inspect.Parameter.empty and _jsonable(default) and \
            not (isinstance(default, float) and not math.isfinite(default)):
        schema = {**schema, "default": list(default) if isinstance(default, tuple) else default}
    return schema


def description(function: Any) -> str:
    """The docstring's first paragraph (a signature line that some builtins repeat dropped), cut at a sentence."""
    doc = inspect.getdoc(function) or ""
    paragraphs = [p.strip() for p in doc.split("\n\n") if p.strip()]
    if paragraphs and re.match(r"^[\w.]+\(.*\)( -> .*)?$", paragraphs[0].splitlines()[0]):
        first = paragraphs[0].split("\n", 1)
        paragraphs[0] = first[1].strip() if len(first) > 1 else ""
        paragraphs = [p for p in paragraphs if p]
    text = " ".join((paragraphs[0] if paragraphs else "").split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS].rsplit(". ", 1)[0] + "."


def doc_examples(name: str, function: Any, signature: inspect.Signature) -> list[dict[str, Any]]:
    """The calls of ``name`` a docstring shows (``>>> name(1, 2)``, ``>>> module.name(x=3)``) whose arguments are
    all literals, as argument objects: the arguments a real user of the function would pass."""
    found = []
    for line in re.findall(rf">>> (?:[\w.]+\.)?{re.escape(name)}\((.*)\)\s*$", inspect.getdoc(function) or "",
                           re.MULTILINE):
        try:
            call = ast.parse(f"f({line})", mode="eval").body
            assert isinstance(call, ast.Call)
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
            bound = signature.bind(*args, **kwargs)
        except (SyntaxError, ValueError, TypeError, AssertionError, MemoryError, RecursionError):
            continue
        arguments = {}
        for key, value in bound.arguments.items():
            value = list(value) if isinstance(value, (tuple, set, frozenset)) else value
            if not _jsonable(value) and not isinstance(value, dict):
                break
            arguments[key] = value
        else:
            if arguments not in found:
                found.append(arguments)
    return found[:5]


BUILTIN_SIGNATURES = {
    "append": "x, /", "appendleft": "x, /", "extend": "iterable, /", "extendleft": "iterable, /", "count": "value, /",
    "index": "value, start=0, stop=None, /", "insert": "index, object, /", "remove": "value, /", "rotate": "n=1, /",
    "pop": "", "popleft": "", "clear": "", "copy": "", "reverse": "", "keys": "", "values": "", "items": "",
    "add": "element, /", "discard": "element, /", "difference": "*others", "difference_update": "*others",
    "intersection": "*others", "intersection_update": "*others", "isdisjoint": "other, /", "issubset": "other, /",
    "issuperset": "other, /", "symmetric_difference": "other, /", "symmetric_difference_update": "other, /",
    "union": "*others", "update": "*others",
}
"""Methods of builtin containers (deque, set, dict) that carry no signature a program can read: as documented."""


def signature_of(name: str, function: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        params = BUILTIN_SIGNATURES.get(name) if inspect.isbuiltin(function) else None
        return None if params is None else inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307


def as_tool(name: str, function: Any, qualname: str) -> PyTool | None:
    """``function`` as a tool (``**kwargs`` left out), or None where its signature cannot be read."""
    signature = signature_of(name, function)
    if signature is None:
        return None
    properties, required = {}, []
    for param in signature.parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD or param.name in ("self", "cls"):
            continue
        properties[param.name] = param_schema(param)
        if param.default is inspect.Parameter.empty and param.kind is not inspect.Parameter.VAR_POSITIONAL:
            required.append(param.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if examples := doc_examples(name, function, signature):
        schema["examples"] = examples
    return PyTool(name, description(function) or f"{qualname}{signature}", schema, function, signature, qualname)


def call_tool(tool: PyTool, arguments: dict[str, Any]) -> Any:
    """Call the function with JSON arguments bound to its signature (``*args`` from the array; text given where
    bytes are wanted encoded as UTF-8, the one conversion a JSON face needs)."""
    signature = tool.signature
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name not in arguments:
            continue
        value = arguments[param.name]
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(value if isinstance(value, list) else [value])
        elif param.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[param.name] = value
    unknown = set(arguments) - set(signature.parameters)
    if unknown:
        raise TypeError(f"{tool.name}() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    try:
        return tool.call(*args, **kwargs)
    except TypeError as exc:
        if "bytes-like" not in str(exc) and "bytes" not in str(exc).split("not")[0]:
            raise
        encode = lambda v: v.encode() if isinstance(v, str) else v  # noqa: E731
        return tool.call(*map(encode, args), **{k: encode(v) for k, v in kwargs.items()})


def _queue() -> Any:
    return collections.deque(maxlen=50)


def _sqlite() -> Any:
    import sqlite3

    return sqlite3.connect(":memory:")


def _calendar() -> Any:
    import calendar

    return calendar.TextCalendar()


def _config() -> Any:
    import configparser

    return configparser.ConfigParser()


def _random() -> Any:
    import random

    return random.Random(0)


def _graph() -> Any:
    import networkx

    return networkx.Graph()


def _sorted_dict() -> Any:
    import sortedcontainers

    return sortedcontainers.SortedDict()


def _text_buffer() -> Any:
    import io

    return io.StringIO()


FUNCTION_MODULES = (
    "math", "cmath", "statistics", "textwrap", "re", "json", "base64", "binascii", "zlib", "colorsys",
    "calendar", "difflib", "html", "urllib.parse", "ipaddress", "unicodedata", "operator", "bisect", "heapq",
    "shlex", "fnmatch", "posixpath", "email.utils", "mimetypes", "quopri", "hashlib", "uuid",
    "decimal", "locale", "stringprep", "codecs", "functools", "secrets",
    "yaml", "idna", "wcwidth", "pygments.lexers", "packaging.version", "packaging.utils",
    "dateutil.parser", "tabulate", "semantic_version", "sympy", "numpy",
    "tomlkit", "markdownify", "mdurl", "yarl",
    "struct", "hmac", "xml.sax.saxutils", "pprint", "regex", "tomllib", "tomli_w", "mpmath",
)
"""Modules whose public functions make a group each (one that is not installed is left out, and said)."""
STATEFUL = {
    "queue": ("collections", _queue, "a double-ended queue (collections.deque, at most 50 items)"),
    "key-value store": ("builtins", dict, "a dict used as a key-value store"),
    "counter": ("collections", collections.Counter, "a multiset that counts (collections.Counter)"),
    "set": ("builtins", set, "a set of values"),
    "list": ("builtins", list, "a Python list"),
    "text calendar": ("calendar", _calendar, "a text calendar (calendar.TextCalendar)"),
    "sql database": ("sqlite3", _sqlite, "an in-memory SQLite database connection"),
    "config file": ("configparser", _config, "an INI configuration (configparser.ConfigParser)"),
    "random generator": ("random", _random, "a seeded random number generator (random.Random(0))"),
    "text buffer": ("io", _text_buffer, "an in-memory text file (io.StringIO)"),
    "graph": ("networkx", _graph, "an undirected graph (networkx.Graph)"),
    "sorted map": ("sortedcontainers", _sorted_dict, "a dict kept sorted by key (sortedcontainers.SortedDict)"),
}
"""Objects whose methods make a group, one object per session, so calls change what later calls see."""


SLICES = {"sympy": 12, "numpy": 10, "mpmath": 10, "math": 2, "operator": 2}
"""Modules served in slices (``mpmath-3``: the third of ten), each ~25-50 tools."""


def groups() -> dict[str, Group]:
    """Every group, by name (nothing imported: ``available`` says which this interpreter can serve)."""
    found = {}
    for module in FUNCTION_MODULES:
        package = module.split(".")[0]
        if module in SLICES:
            n = SLICES[module]
            found.update({f"{module}-{k}": Group(f"{module}-{k}", package, module, part=(k, n))
                          for k in range(1, n + 1)})
        else:
            found[module] = Group(module, package, module)
    for name, (package, make, about) in STATEFUL.items():
        found[name.replace(" ", "-")] = Group(name.replace(" ", "-"), package, package, make, about)
    return found


def available(names: Iterable[str] | None = None) -> tuple[dict[str, Group], dict[str, str]]:
    """(groups that import, {group: why not}) among ``names`` (all by default)."""
    every = groups()
    ok, missing = {}, {}
    for name in names or every:
        group = every.get(name)
        if group is None:
            missing[name] = f"unknown group; known: {', '.join(every)}"
            continue
        try:
            importlib.import_module(group.module)
            if group.make is not None:
                group.make()
        except Exception as exc:  # noqa: BLE001 - an optional package that is not installed
            missing[name] = f"{type(exc).__name__}: {exc}"
            continue
        ok[name] = group
    return ok, missing
