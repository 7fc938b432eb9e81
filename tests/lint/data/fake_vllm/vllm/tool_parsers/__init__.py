_TOOL_PARSERS_TO_REGISTER = {
    "hermes": ("hermes_tool_parser", "Hermes2ProToolParser"),
    "mistral": ("mistral_tool_parser", "MistralToolParser"),
}
