"""Terminal explorers for one program each (a REPL or a tool): more distinct environments for the terminal.

Each explorer opens its program in the terminal (or drives it from the shell) and works it as a person
would, with the same share of mistakes as the shell explorer; its ``source`` (``terminal:<program>``) goes
into the trajectory's provenance, so ``lwm data split --by source`` can hold a program out whole. Registered
as explorers ``terminal-<program>``; a collection part picks one with ``policy="explorer:terminal-sqlite3"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwm.collect.explorers.base import BaseExplorer
from lwm.collect.explorers.terminal import keys
from lwm.registry import register

Maker = Callable[[BaseExplorer], str]


@dataclass(frozen=True)
class Program:
    start: str | None
    """Keystrokes that open the program, or set up what a shell tool works on (None: nothing first)."""
    normal: tuple[Maker, ...]
    mistakes: tuple[Maker, ...]


def _n(e: BaseExplorer) -> int:
    return e.rng.randint(1, 99)


PROGRAMS: dict[str, Program] = {
    "python": Program("python3 -q\n", (
        lambda e: f"{e.word()} = {_n(e)}",
        lambda e: f"{_n(e)} * {_n(e)} + {_n(e)}",
        lambda e: f"[i * i for i in range({e.rng.randint(2, 8)})]",
        lambda e: f"'{e.word()}'.upper() + '-{e.word()}'",
        lambda e: f"import math; math.sqrt({_n(e) ** 2})",
        lambda e: f"d = {{'{e.word()}': {_n(e)}, '{e.word()}': {_n(e)}}}; sorted(d.items())",
        lambda e: f"sum(range({_n(e)})), max([{_n(e)}, {_n(e)}, {_n(e)}])",
        lambda e: f"len('{e.word()} {e.word()}'.split())",
    ), (
        lambda e: f"{e.word()}_{_n(e)} + 1",
        lambda e: f"{_n(e)} / 0",
        lambda e: f"int('{e.word()}')",
        lambda e: f"print('{e.word()}'",
        lambda e: f"[1, 2, 3][{e.rng.randint(5, 9)}]",
    )),
    "sqlite3": Program("sqlite3 shop.db\n", (
        lambda e: "CREATE TABLE IF NOT EXISTS items(id INTEGER PRIMARY KEY, name TEXT, price REAL);",
        lambda e: f"INSERT INTO items(name, price) VALUES('{e.word()}', {_n(e)}.5);",
        lambda e: "SELECT * FROM items;",
        lambda e: "SELECT count(*), round(avg(price), 2) FROM items;",
        lambda e: f"SELECT name FROM items WHERE price > {_n(e)} ORDER BY price;",
        lambda e: f"UPDATE items SET price = price + 1 WHERE name = '{e.word()}';",
        lambda e: f"DELETE FROM items WHERE id = {e.rng.randint(1, 5)};",
        lambda e: e.rng.choice([".tables", ".schema items", ".headers on", ".mode list"]),
    ), (
        lambda e: "SELEC * FROM items;",
        lambda e: f"SELECT * FROM {e.word()};",
        lambda e: "INSERT INTO items VALUES(1);",
        lambda e: ".tabels",
    )),
    "bc": Program("bc -lq\n", (
        lambda e: f"{_n(e)} + {_n(e)} * {_n(e)}",
        lambda e: f"scale={e.rng.randint(0, 6)}; {_n(e)} / {e.rng.randint(2, 9)}",
        lambda e: f"sqrt({_n(e)})",
        lambda e: f"x = {_n(e)}; x ^ 2",
        lambda e: f"obase=2; {_n(e)}",
        lambda e: "obase=10",
    ), (
        lambda e: f"{_n(e)} / 0",
        lambda e: f"{e.word()}(",
        lambda e: "sqrt(-1)",
    )),
    "jq": Program(None, (
        lambda e: f"echo '{{\"{e.word()}\": {_n(e)}, \"list\": [{_n(e)}, {_n(e)}]}}' | jq '.list | add'",
        lambda e: f"jq -n '[range({e.rng.randint(2, 9)})] | map(. * 2)'",
        lambda e: f"echo '[{{\"name\": \"{e.word()}\", \"n\": {_n(e)}}}]' | jq -r '.[0].name'",
        lambda e: f"echo '{{\"a\": {{\"b\": \"{e.word()}\"}}}}' | jq -c 'keys, .a.b'",
        lambda e: "jq -n '{x: 1, y: [true, null]}'",
    ), (
        lambda e: "echo '{\"a\": 1' | jq .",
        lambda e: "jq -n '.[' ",
        lambda e: f"jq '.a' {e.word()}.json",
    )),
    "awk": Program(None, (
        lambda e: f"printf '{e.word()} {_n(e)}\\n{e.word()} {_n(e)}\\n{e.word()} {_n(e)}\\n' > t.txt && cat t.txt",
        lambda e: "awk '{s += $2} END {print \"total\", s}' t.txt",
        lambda e: f"awk '$2 > {_n(e)} {{print $1}}' t.txt",
        lambda e: "awk '{print NR\": \"toupper($1)}' t.txt",
        lambda e: "awk 'BEGIN {for (i = 1; i <= 3; i++) print i * i}'",
    ), (
        lambda e: "awk '{print $1' t.txt",
        lambda e: f"awk '{{print}}' {e.word()}.txt",
    )),
    "git": Program(None, (
        lambda e: "git init -q . 2>/dev/null; git status --short",
        lambda e: f"echo '{e.word()} {_n(e)}' >> {e.word()}.txt && git add -A && git -c user.email=a@b.c "
                  f"-c user.name=dev commit -qm '{e.word()}' && git log --oneline | head -n 3",
        lambda e: "git log --oneline | head -n 5",
        lambda e: "git status --short",
        lambda e: "git branch",
        lambda e: f"git checkout -q -b {e.word()}{_n(e)} && git branch",
        lambda e: "git diff --stat HEAD~1 2>&1 | tail -n 3",
    ), (
        lambda e: "git comit -m x",
        lambda e: f"git checkout {e.word()}-missing",
        lambda e: "git show nosuchref",
    )),
    "man": Program(None, (
        lambda e: f"man -P cat {e.rng.choice(['ls', 'cp', 'grep', 'tar', 'sort', 'chmod', 'find'])} | head -n 20",
        lambda e: f"whatis {e.rng.choice(['ls', 'mv', 'cat', 'head', 'wc', 'uniq'])}",
        lambda e: f"apropos {e.rng.choice(['copy', 'directory', 'compress', 'network'])} | head -n 8",
        lambda e: f"man -k {e.rng.choice(['list', 'sort', 'file'])} | head -n 5",
    ), (
        lambda e: f"man {e.word()}cmd",
        lambda e: "whatis nosuchcommand",
    )),
    "node": Program("node\n", (
        lambda e: f"let {e.word()} = {_n(e)}",
        lambda e: f"[{_n(e)}, {_n(e)}, {_n(e)}].map(x => x * 2)",
        lambda e: f"'{e.word()}'.toUpperCase() + '-' + '{e.word()}'.length",
        lambda e: f"JSON.stringify({{{e.word()}: {_n(e)}, list: [1, 2]}})",
        lambda e: f"Math.max({_n(e)}, {_n(e)}) + Math.floor({_n(e)} / 7)",
        lambda e: f"Object.keys({{a: 1, {e.word()}: 2}})",
        lambda e: "typeof " + e.rng.choice(["1", "null", "[]", "undefined", "'x'"]),
    ), (
        lambda e: f"{e.word()}{_n(e)}.length",
        lambda e: "JSON.parse('{bad')",
        lambda e: f"null.{e.word()}",
        lambda e: "let = 5",
    )),
    "perl": Program(None, (
        lambda e: f"perl -e 'print join(\",\", map {{ $_ * $_ }} 1..{e.rng.randint(2, 8)}), \"\\n\"'",
        lambda e: f"echo '{e.word()} {e.word()} {e.word()}' | perl -lane 'print scalar(@F), \" \", uc $F[0]'",
        lambda e: f"perl -le 'print {_n(e)} ** 2 % {e.rng.randint(3, 17)}'",
        lambda e: f"perl -le '%h = ({e.word()} => {_n(e)}, {e.word()} => {_n(e)}); print for sort keys %h'",
        lambda e: f"echo '{e.word()}-{_n(e)}' | perl -pe 's/(\\d+)/<$1>/'",
    ), (
        lambda e: "perl -e 'print \"unclosed'",
        lambda e: f"perl -Mstrict -e '${e.word()} = 1'",
        lambda e: "perl -le 'die \"stopped\\n\"'",
    )),
    "sed": Program("printf 'alpha 1\\nbeta 22\\ngamma 333\\n' > s.txt && cat s.txt\n", (
        lambda e: f"printf '{e.word()} {_n(e)}\\n{e.word()} {_n(e)}\\n{e.word()} {_n(e)}\\n' > s.txt && cat s.txt",
        lambda e: "sed 's/[0-9]\\+/N/g' s.txt",
        lambda e: "sed -n '2p' s.txt",
        lambda e: f"sed '1i # {e.word()}' s.txt",
        lambda e: "sed -E 's/^([a-z]+) ([0-9]+)$/\\2 \\1/' s.txt",
        lambda e: f"sed -i 's/^/{e.word()}: /' s.txt && cat s.txt",
    ), (
        lambda e: "sed 's/a/b' s.txt",
        lambda e: f"sed -n '1p' {e.word()}.txt",
    )),
    "ed": Program("ed -p '*' notes.txt\n", (
        lambda e: f"a\n{e.word()} {_n(e)}\n{e.word()}\n.",
        lambda e: ",p",
        lambda e: ",n",
        lambda e: "=",
        lambda e: f"1s/$/ {e.word()}/",
        lambda e: "$d",
        lambda e: "w",
    ), (
        lambda e: f"{e.rng.randint(40, 90)}p",
        lambda e: "s/nosuchtext/x/",
        lambda e: "h",
    )),
    "tclsh": Program("tclsh\n", (
        lambda e: f"set {e.word()} {_n(e)}",
        lambda e: f"expr {{{_n(e)} * {_n(e)} + {_n(e)}}}",
        lambda e: f"string toupper {e.word()}",
        lambda e: f"llength [list {e.word()} {e.word()} {e.word()}]",
        lambda e: f"lsort [list {e.word()} {e.word()} {e.word()}]",
        lambda e: f"format %05.2f {_n(e)}.{_n(e)}",
    ), (
        lambda e: f"puts ${e.word()}",
        lambda e: f"expr {{{_n(e)} / 0}}",
        lambda e: f"{e.word()}cmd 1 2",
    )),
    "textutils": Program("printf '%s\\n' pear fig pear plum fig pear > w.txt && wc -l w.txt\n", (
        lambda e: f"printf '%s\\n' {' '.join(e.word() for _ in range(6))} > w.txt && wc -l w.txt",
        lambda e: "sort w.txt | uniq -c | sort -rn | head -n 5",
        lambda e: "tr 'a-z' 'A-Z' < w.txt | head -n 4",
        lambda e: f"echo '{e.word()}:{_n(e)}:{e.word()}' | cut -d: -f{e.rng.randint(1, 3)}",
        lambda e: "nl w.txt | tail -n 3",
        lambda e: f"seq {e.rng.randint(1, 5)} {e.rng.randint(6, 20)} | paste -sd+ | bc",
        lambda e: "sort -r w.txt | head -n 3",
    ), (
        lambda e: f"sort {e.word()}.txt",
        lambda e: "cut -f w.txt",
        lambda e: "uniq --nosuchflag w.txt",
    )),
    "tar": Program("mkdir -p pkg && echo hello > pkg/readme.txt && tar czf pkg.tgz pkg && ls\n", (
        lambda e: f"mkdir -p pkg && echo '{e.word()}' > pkg/{e.word()}.txt && ls pkg",
        lambda e: "tar czf pkg.tgz pkg && ls -l pkg.tgz | cut -d' ' -f5-",
        lambda e: "tar tzf pkg.tgz",
        lambda e: "gzip -kf pkg.tgz 2>&1; ls",
        lambda e: "mkdir -p out && tar xzf pkg.tgz -C out && find out -type f",
        lambda e: "tar tvzf pkg.tgz | head -n 5",
    ), (
        lambda e: f"tar xzf {e.word()}.tgz",
        lambda e: "tar czf",
        lambda e: "gzip -d pkg",
    )),
    "dc": Program("dc\n", (
        lambda e: f"{_n(e)} {_n(e)} + p",
        lambda e: f"{_n(e)} {_n(e)} * {_n(e)} - p",
        lambda e: f"{e.rng.randint(0, 4)} k {_n(e)} {e.rng.randint(2, 9)} / p",
        lambda e: f"{_n(e)} v p",
        lambda e: f"{_n(e)} sa la la * p",
        lambda e: "f",
        lambda e: "c",
    ), (
        lambda e: f"{_n(e)} 0 / p",
        lambda e: "+ p",
        lambda e: "lz p",
    )),
    "units": Program("units -v\n", (
        lambda e: f"{_n(e)} miles\nkm",
        lambda e: f"{_n(e)} degF\n",
        lambda e: f"{_n(e)} gallons\nliters",
        lambda e: f"{_n(e)} kWh\nMJ",
        lambda e: f"{e.rng.choice(['1 lightyear', '1 furlong', '1 acre', '1 atm'])}\n"
                  f"{e.rng.choice(['m', 'ft', 'm^2', 'Pa'])}",
        lambda e: f"{_n(e)} mph\nm/s",
    ), (
        lambda e: f"{_n(e)} {e.word()}s\nm",
        lambda e: f"{_n(e)} kg\nm",
    )),
    "lua": Program("lua5.4\n", (
        lambda e: f"{e.word()} = {_n(e)}",
        lambda e: f"print({_n(e)} * {_n(e)} + {_n(e)}, {_n(e)} // {e.rng.randint(2, 9)})",
        lambda e: f"t = {{{_n(e)}, {_n(e)}, {_n(e)}}}; print(#t, table.concat(t, ','))",
        lambda e: f"print(string.upper('{e.word()}'), string.rep('ab', {e.rng.randint(1, 4)}))",
        lambda e: f"print(math.floor({_n(e)} / 7), math.max({_n(e)}, {_n(e)}))",
        lambda e: f"for i = 1, {e.rng.randint(2, 5)} do io.write(i * i, ' ') end print()",
        lambda e: "print(type(nil), type({}), type(print))",
    ), (
        lambda e: f"print({e.word()}.x)",
        lambda e: "print('unclosed)",
        lambda e: f"error('{e.word()}')",
    )),
    "ruby": Program("irb --simple-prompt --nocolorize --nomultiline --noreadline\n", (
        lambda e: f"{e.word()} = {_n(e)}",
        lambda e: f"[{_n(e)}, {_n(e)}, {_n(e)}].map {{ |x| x * 2 }}.sum",
        lambda e: f"'{e.word()}'.upcase + '-' + '{e.word()}'.reverse",
        lambda e: f"{{{e.word()}: {_n(e)}, b: [1, 2]}}.keys",
        lambda e: f"(1..{e.rng.randint(3, 9)}).select(&:even?)",
        lambda e: f"{_n(e)}.to_s(2)",
        lambda e: "Time.at(0).utc.year",
    ), (
        lambda e: f"{e.word()}{_n(e)}.length",
        lambda e: f"{_n(e)} / 0",
        lambda e: "nil.upcase",
        lambda e: "def x(",
    )),
    "make": Program("printf 'all: hello.txt\\n\\nhello.txt:\\n\\techo hello > hello.txt\\n' > Makefile"
                    " && cat Makefile\n", (
        lambda e: "make",
        lambda e: "make -n",
        lambda e: f"printf '{e.word()}:\\n\\t@echo {e.word()} {_n(e)}\\n' >> Makefile && tail -n 2 Makefile",
        lambda e: "make -p 2>/dev/null | grep -c '^[a-z].*:' ",
        lambda e: "touch hello.txt && make",
        lambda e: "rm -f hello.txt && make && ls",
        lambda e: "make --version | head -n 1",
    ), (
        lambda e: f"make {e.word()}-target",
        lambda e: "make -f nosuchfile",
    )),
    "diff": Program("printf 'a\\nb\\nc\\n' > old.txt && printf 'a\\nB\\nc\\nd\\n' > new.txt && ls\n", (
        lambda e: "diff old.txt new.txt",
        lambda e: "diff -u old.txt new.txt",
        lambda e: f"printf '{e.word()}\\n{e.word()}\\n' >> new.txt && diff -u old.txt new.txt | tail -n 4",
        lambda e: "diff -u old.txt new.txt > fix.patch; patch -s old.txt < fix.patch && cat old.txt",
        lambda e: "cmp old.txt new.txt",
        lambda e: "diff -q old.txt new.txt; echo exit=$?",
        lambda e: f"sed -i '1s/.*/{e.word()}/' new.txt && diff old.txt new.txt",
    ), (
        lambda e: f"diff old.txt {e.word()}.txt",
        lambda e: "patch -s old.txt < nosuch.patch",
    )),
}


class ProgramExplorer(BaseExplorer):
    program = ""

    def __init__(self, mistake_rate: float = 0.15):
        super().__init__(mistake_rate)
        self.name = f"terminal-{self.program}-v1"
        self.source = f"terminal:{self.program}"
        self.opened = False

    def act(self, observation: str) -> list[dict[str, Any]]:
        spec = PROGRAMS[self.program]
        if spec.start and not self.opened:
            self.opened = True
            return keys(spec.start, 0.8)
        makers = spec.mistakes if self.mistake() else spec.normal
        return keys(self.rng.choice(makers)(self) + "\n", 0.5)


for _program in PROGRAMS:
    register("explorer", f"terminal-{_program}")(type(f"{_program.title()}Explorer", (ProgramExplorer,),
                                                       {"program": _program}))
