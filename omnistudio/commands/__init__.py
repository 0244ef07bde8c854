"""One module per `omnistudio` subcommand: ``add_parser(subparsers)`` and ``run(args)``."""
