"""Render a chat template with Jinja2 the way transformers' apply_chat_template does (its
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, loop controls, its tojson that
keeps non-ASCII, raise_exception and strftime_now): the second implementation of Jinja that the
servers' prompts are compared with. Reads {template, context} as JSON on stdin, writes the text."""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    job = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    sys.stdout.write(env.from_string(job["template"]).render(**job["context"]))


main()
