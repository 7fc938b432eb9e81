from vllm.entrypoints.openai.cli_args import make_arg_parser


class ServeSubcommand:
    def subparser_init(self, subparsers):
        return make_arg_parser(subparsers.add_parser("serve"))
