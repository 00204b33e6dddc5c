"""Terminal explorer: everyday shell work on the files it has seen, with typos and missing files."""

from __future__ import annotations

from typing import Any

from lwm.collect.explorers.base import BaseExplorer, find_all
from lwm.registry import register

FILE = r"\b[\w-]+\.(?:txt|py|sh|md|csv|json|log)\b"
SCRIPT = "import sys\\nnums = [int(x) for x in sys.argv[1:]]\\nprint('sum', sum(nums), 'max', max(nums))\\n"


def keys(text: str, duration: float = 0.3) -> list[dict[str, Any]]:
    return [{"keystrokes": text, "duration": duration}]


@register("explorer", "terminal")
class TerminalExplorer(BaseExplorer):
    name = "terminal-heuristic-v1"

    def __init__(self, mistake_rate: float = 0.15):
        super().__init__(mistake_rate)
        self.files: list[str] = []
        self.dirs: list[str] = []

    def observe(self, observation: str) -> None:
        for name in find_all(FILE, observation):
            if name not in self.files:
                self.files.append(name)

    def file(self) -> str:
        return self.rng.choice(self.files) if self.files else "notes.txt"

    def act(self, observation: str) -> list[dict[str, Any]]:
        self.observe(observation)
        if self.mistake():
            return self.pick([
                (2, lambda: keys(f"cat {self.word()}_{self.rng.randint(1, 99)}.txt\n")),
                (2, lambda: keys(self.rng.choice(["sl", "grpe x notes.txt", "pyhton3 --version", "cd nowhere",
                                                  "ls --colour=maybe", "head -n x notes.txt"]) + "\n")),
                (1, lambda: keys("python3 -c 'print(1/0)'\n", 0.6)),
                (1, lambda: keys(f"rm {self.word()}.log\n")),
                (1, lambda: [{"keystrokes": "sleep 10\n", "duration": 0.3}, {"keystrokes": "C-c", "duration": 0.2}]),
            ])
        return self.pick([
            (3, self.create),
            (3, lambda: keys(self.rng.choice(["ls\n", "ls -la\n", "ls -l\n", "find . -type f | sort\n", "pwd\n",
                                              "du -sh .\n", "ls -1 | wc -l\n"]))),
            (4, self.read),
            (2, self.modify),
            (2, self.run),
            (1, lambda: keys(self.rng.choice(["whoami\n", "uname -s\n", "echo $HOME\n", "date +%Y\n",
                                              "seq 1 5\n", "expr 6 \\* 7\n", "history | tail -n 3\n"]))),
        ])

    def create(self) -> list[dict[str, Any]]:
        name = f"{self.word()}.txt"
        self.files.append(name)
        lines = " ".join(self.word() for _ in range(self.rng.randint(1, 4)))
        return self.pick([
            (3, lambda: keys(f"echo '{lines}' > {name}\n")),
            (2, lambda: keys(f"printf '%s\\n' {lines} > {name}\n")),
            (1, lambda: keys(f"mkdir -p {self.word()} && touch {name} && ls\n")),
            (1, lambda: keys(f"seq {self.rng.randint(1, 5)} {self.rng.randint(6, 30)} > {name}\n")),
        ])

    def read(self) -> list[dict[str, Any]]:
        f = self.file()
        return keys(self.rng.choice([f"cat {f}\n", f"head -n 2 {f}\n", f"wc -l {f}\n", f"tail -n 1 {f}\n",
                                     f"grep -n {self.word()} {f}\n", f"sort {f}\n", f"wc -c {f}\n",
                                     f"cat -n {f}\n", f"stat -c '%s %n' {f}\n"]))

    def modify(self) -> list[dict[str, Any]]:
        f = self.file()
        new = f"{self.word()}_{self.rng.randint(1, 9)}.txt"
        self.files.append(new)
        return keys(self.rng.choice([f"echo {self.word()} >> {f}\n", f"cp {f} {new}\n", f"mv {f} {new}\n",
                                     f"sed -i 's/a/A/g' {f} && cat {f}\n", f"sort -r {f} > {new}\n"]))

    def run(self) -> list[dict[str, Any]]:
        if "stats.py" not in self.files:
            self.files.append("stats.py")
            return keys(f"printf \"{SCRIPT}\" > stats.py\n")
        args = " ".join(str(self.rng.randint(1, 50)) for _ in range(self.rng.randint(1, 5)))
        return keys(self.rng.choice([f"python3 stats.py {args}\n", "python3 stats.py\n", "cat stats.py\n",
                                     f"python3 -c 'print(sum(range({self.rng.randint(2, 100)})))'\n"]), 0.6)
