"""`python -m dongjing`: print the version, backends, optional packages and machine."""

from dongjing.utils.collect_env import main

main()
