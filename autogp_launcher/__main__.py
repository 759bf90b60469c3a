"""``python -m autogp_launcher``: the ``autogp`` command."""

from autogp_launcher import main

main()
