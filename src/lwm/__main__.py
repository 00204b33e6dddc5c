"""``python -m lwm``: the CLI, for machines where the ``lwm`` script is not on the PATH."""

from lwm.cli import main

main()
