#!/usr/bin/env python3
"""Writes the expected outputs of s1serve's Jinja interpreter, rendered by Python jinja2 in the
environment Transformers renders chat templates in (transformers.utils.chat_template_utils.
_compile_jinja_template: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
the generation block, its tojson, raise_exception, namespace and dict):

  tests/parity/text/jinja_cases.jsonl         small templates, one construct or corner each, and
                                              systemone-style decision templates (llama.cpp's variables)
  tests/parity/text/jinja_chat_renders.jsonl  every chat template in tests/parity/text/chat_templates/
                                              (ours and llama.cpp's copies) over generated conversations:
                                              system/user/assistant/tool roles, tool calls, tools,
                                              reasoning, list content, generation prompt, thinking

Each line holds the template (a file name or the text), the variables, and the rendered text or the
error (its Python type and message). The first line is a header with the library versions.

    pip install jinja2 transformers
    python tools/reference/make_jinja_fixtures.py
"""
import json
import pathlib
import random

import jinja2
import transformers
from transformers.utils.chat_template_utils import _compile_jinja_template

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = ROOT / "tests/parity/text"
TEMPLATES = TEXT / "chat_templates"

# (template, variables): each exercises a construct the interpreter supports, or a corner of
# Python's semantics that templates depend on.
CASES = [
    ("plain text\n", {}),
    ("trailing newlines\n\n", {}),
    ("a\r\nb\rc\n", {}),
    ("{{ x }}", {"x": "hello"}),
    ("{{ missing }}|{{ missing is defined }}|{{ missing | length }}", {}),
    ("{{ none }} {{ true }} {{ false }} {{ 1 }} {{ 1.0 }} {{ -0.5 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }}", {}),
    ("{{ [1, 'a', none, true, 2.5, {'k': 'v'}, []] }}", {}),
    ("{{ 'it\\'s' }} {{ \"say \\\"hi\\\"\" }} {{ ['it\\'s', 'a\"b', 'both \\' \"'] }}", {}),
    ("{{ ['\\n', '\\t', '\\x01', 'é', '\\u00a0'] }}", {}),
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}", {}),
    ("{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 3 * 'x' }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ [1] }}", {}),
    ("{{ 'a' + 'b' }} {{ [1] + [2] }} {{ true + 1 }}", {}),
    ("{{ 1 + 'a' }}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{{ 1 == 1.0 }} {{ 1 != 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 'x' in missing }}", {}),
    ("{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ '' or [] }} {{ not 0 }} {{ not [1] }}", {}),
    ("{{ 'yes' if flag else 'no' }}|{{ 'only' if flag }}|{{ 1 if 0 else 2 if 0 else 3 }}", {"flag": False}),
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {"a": 0, "b": "x"}),
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {"a": 0, "b": ""}),
    ("{% for x in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %}",
     {"items": ["a", "b", "c"]}),
    ("{% for x in items %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {"items": [1, 2, 3]}),
    ("{% for x in items if x > 1 %}{{ x }}{{ loop.length }}{% else %}empty{% endfor %}", {"items": [1, 2, 3]}),
    ("{% for x in items %}{{ x }}{% else %}empty{% endfor %}", {"items": []}),
    ("{% for x in missing %}{{ x }}{% else %}none{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": [2]}}),
    ("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"z": 1, "y": 2}}),
    ("{% for c in 'héllo' %}{{ c }}.{% endfor %}", {}),
    ("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("{% for i in range(3) %}{{ i }}{% endfor %} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}", {}),
    ("{% for x in [1, 2] %}{{ loop.cycle('odd', 'even') }}{% endfor %}", {}),
    ("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i * 10 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("{% for i in [1, 2] %}[{{ y }}]{% set y = i %}{% endfor %}", {}),
    ("{% if true %}{% set z = 3 %}{% endif %}{{ z }}", {}),
    ("{% set ns = namespace(count=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.count = ns.count + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.count }} {{ ns.items }}", {}),
    ("{% set a, b = [1, 2] %}{{ b }}{{ a }}{% set c, d = 3, 4 %}{{ c + d }}", {}),
    ("{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]", {}),
    ("{% set block | trim | upper %}  inner text  {% endset %}[{{ block }}]", {}),
    ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(name='c', punct='.') }}", {}),
    ("{% macro m(x) %}{{ x }}|{{ outer }}{% endmacro %}{% set outer = 'late' %}{{ m(1) }}", {}),
    ("{% macro m(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ m(1) }}", {}),
    ("{% macro m() %}x{% endmacro %}{{ m(1) }}", {}),
    ("{% macro row(cells) %}{% for c in cells %}<{{ caller(c) }}>{% endfor %}{% endmacro %}{% call(c) row([1, 2]) %}c{{ c }}{% endcall %}", {}),
    ("{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}body{% endcall %}", {}),
    ("{% filter upper %}shout {{ 'this' }}{% endfilter %}", {}),
    ("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}", {}),
    ("{% raw %}{{ not rendered }}{% if %}{% endraw %}", {}),
    ("{# a comment #}x{#- trimmed -#}  y", {}),
    ("  {{- ' stripped ' -}}  \n", {}),
    ("line\n    {% if true %}\n    kept\n    {% endif %}\nend", {}),
    ("line\n    {%+ if true %}\nplus\n{%- endif %}\nend", {}),
    ("a\n  {# comment #}\nb", {}),
    ("{% if true %}\n{{ 'x' }}\n{% endif %}\n", {}),
    ("{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("{%- generation -%}\n  {{ 'gen' }}{% set g = 1 %}\n{%- endgeneration -%}[{{ g }}]", {}),
    ("{{ s | trim }}|{{ s | trim('ab') }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}", {"s": " \u3000 ab text ba \n"}),
    ("{{ s | length }} {{ s | upper }} {{ s | lower }} {{ s | capitalize }} {{ s | title }} {{ s.upper() }} {{ 'straße'.upper() }}", {"s": "héllo wOrld-x"}),
    ("{{ s[1] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[:-2] }} {{ s[10:] }}", {"s": "häll😀"}),
    ("{{ l[1] }} {{ l[-1] }} {{ l[1:] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5] }}|{{ l.0 }}", {"l": [1, 2, 3, 4]}),
    ("{{ s.split(',') }} {{ s.split(',', 1) }} {{ ' a  b '.split() }} {{ 'a b c'.split(none, 1) }} {{ s.rsplit(',', 1) }}", {"s": "a,b,,c"}),
    ("{{ s.startswith('ab') }} {{ s.endswith('yz') }} {{ s.startswith(('x', 'a')) }} {{ s.replace('b', 'B') }} {{ s.find('c') }} {{ s.count('b') }}", {"s": "abcb yz"}),
    ("{{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'Ab1'.isalnum() }} {{ '12'.isdigit() }} {{ ' '.isspace() }}", {}),
    ("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.a }} {{ d['a'] }} {{ d.z }}", {"d": {"a": 1, "b": 2}}),
    ("{{ items | join(', ') }} {{ items | first }} {{ items | last }} {{ items | length }} {{ items | reverse | list }} {{ items | sort }}", {"items": ["b", "C", "a"]}),
    ("{{ items | sort(reverse=true) }} {{ items | sort(case_sensitive=true) }} {{ items | unique | list }} {{ items | min }} {{ items | max }}", {"items": ["b", "C", "a", "B"]}),
    ("{{ users | map(attribute='name') | join('/') }} {{ users | selectattr('admin') | map(attribute='name') | list }} {{ users | rejectattr('admin') | list | length }}", {"users": [{"name": "x", "admin": True}, {"name": "y", "admin": False}]}),
    ("{{ users | selectattr('role', 'equalto', 'tool') | list | length }} {{ users | map(attribute='missing', default='-') | list }}", {"users": [{"role": "tool"}, {"role": "user"}]}),
    ("{{ nums | select('odd') | list }} {{ nums | reject('even') | list }} {{ nums | select | list }} {{ nums | map('string') | list }} {{ nums | sum }}", {"nums": [0, 1, 2, 3]}),
    ("{{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }} {{ d | items | list }}", {"d": {"b": 2, "a": 3, "C": 1}}),
    ("{{ x | default('dflt') }} {{ none | default('n') }} {{ '' | default('e', true) }} {{ 0 | d('z', boolean=true) }}", {}),
    ("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1f' | int(0, 16) }} {{ '2.5' | float }} {{ 3 | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(method='ceil') }}", {}),
    ("{{ 5 | string }} {{ [1, 'a'] | string }} {{ none | string }} {{ '<a href=\"x\">&</a>' | e }} {{ 'a b  c' | wordcount }} {{ 'x' | safe }}", {}),
    ("{{ text | indent }}|{{ text | indent(2, true) }}|{{ text | indent('> ', blank=true) }}", {"text": "one\n\ntwo\nthree"}),
    ("{{ text | replace('a', 'o') }} {{ text | replace('a', 'o', 1) }} {{ 'ab' | replace('', '-') }}", {"text": "banana"}),
    ("{{ v | tojson }}", {"v": {"s": "é \" \\ \n \t \u0001 😀", "n": None, "b": True, "i": -3, "f": 1.5, "e": 1e-07, "big": 1e22, "l": [], "d": {}}}),
    ("{{ v | tojson(indent=2) }}|{{ v | tojson(indent='\\t') }}|{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(sort_keys=true) }}|{{ v | tojson(ensure_ascii=true) }}",
     {"v": {"z": [1, {"y": "ü😀"}], "a": [], "m": {}}}),
    ("{{ 'x' | tojson }} {{ [1, 2.0, 'a'] | tojson }} {{ {'a': none} | tojson }}", {}),
    ("{{ missing | tojson }}", {}),
    ("{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is none }} {{ x is defined }}", {"x": "s"}),
    ("{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is none }} {{ x is defined }}", {"x": {"a": 1}}),
    ("{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is none }} {{ x is defined }} {{ x is undefined }}", {}),
    ("{{ x is boolean }} {{ x is true }} {{ x is false }} {{ x is integer }} {{ x is float }} {{ x is number }} {{ 1 is integer }} {{ 1.0 is float }}", {"x": False}),
    ("{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 2 is in [1, 2] }} {{ 1 is eq 1 }} {{ 1 is lt 2 }} {{ none is sameas none }}", {}),
    ("{{ x is not none }} {{ x is not string }} {{ not x is none }}", {"x": None}),
    ("{{ m is callable }} {{ 'upper' is filter }} {{ 'odd' is test }}{% macro m() %}{% endmacro %}", {}),
    ("{{ raise_exception('custom failure: ' ~ 42) }}", {}),
    ("{% if messages | length == 0 %}{{ raise_exception('No messages provided.') }}{% endif %}", {"messages": []}),
    ("{{ d.a.b }}", {"d": {}}),
    ("{{ missing.attribute }}", {}),
    ("{{ missing() }}", {}),
    ("{{ [1, 2].append(3) }}", {}),
    ("{% set ns = namespace(_hidden=1) %}", {}),
    ("{{ dict(a=1, b='x') }} {{ dict(a=1) | tojson }} {{ {'x': 1, 'y': [1, 2]}['y'][1] }}", {}),
    ("{{ (1, 2) }} {{ () }} {{ (1,) | length }}", {}),
    ("{{ 'ab' 'cd' }} {{ \"a\\x41\\u00e9\\N\" if false else 'a\\x41\\u00e9' }}", {}),
    ("{{ messages[0]['role'] }} {{ messages[0].content }} {{ messages[1] }}|{{ messages[-1].role }}", {"messages": [{"role": "user", "content": "hi"}]}),
    ("{{ 3 if x is defined and x > 2 else 'small' }}", {"x": 5}),
    ("{% set x = [3, 1, 2] %}{{ x | sort | first }} {{ (x | sort)[-1] }} {{ x | max }} {{ x | min }} {{ x | sum(start=10) }}", {}),
    ("{{ - x }} {{ + x }} {{ -(x + 1) }} {{ - 1.5 | abs }}", {"x": 3}),
    ("{%- for m in messages -%}\n  {%- if m.role == 'user' -%}\n    U:{{ m.content }}\n  {%- elif m.role == 'assistant' -%}\n    A:{{ m.content | trim }}\n  {%- endif -%}\n{%- endfor -%}", {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": " a "}]}),
    ("{% for m in messages %}\n  {% if m.role == 'user' %}\n    U:{{ m.content }}\n  {% endif %}\n{% endfor %}", {"messages": [{"role": "user", "content": "q"}, {"role": "user", "content": "r"}]}),
    ("{{ tools | length }} {{ tools is none }} {{ tools is not none and tools | length > 0 }}", {"tools": None}),
    ("{{ 'a' if tools else 'b' }} {% if tools and tools is iterable and tools is not mapping %}yes{% endif %}", {"tools": [{"type": "function"}]}),
    ("{{ 10000000000000000.0 }} {{ 123456789012.5 }} {{ 0.0001 }} {{ 0.00001234 }} {{ -1e100 }} {{ 5e-324 }} {{ 1.7976931348623157e308 }} {{ 100.0 }}", {}),
    ("{{ 9007199254740993 }} {{ 2 ** 62 }} {{ -9223372036854775807 - 1 }}", {}),
    ("{{ f }} {{ f | tojson }} {{ i | tojson }} {{ [f, i] }}", {"f": 3.0, "i": 3}),
    ("{{ x | list }} {{ 'ab' | list }} {{ {'k': 1} | list }}", {"x": [1]}),
    ("{{ x | first }}|{{ x | last }}|{{ x | join }}|{{ x | length }}", {"x": []}),
    ("{{ 'abc' | first }} {{ 'abc' | last }} {{ 'a' ~ ('b' | upper) }}", {}),
    ("{{ missing | int }} {{ missing | float }} {{ missing | upper }} {{ missing | replace('a', 'b') }} {{ missing | sort }} {{ missing | join(',') }} {{ missing | trim }}", {}),
    ("{{ missing | round }}", {}),
    ("{{ missing | upper }}|{{ missing | replace('a', 'b') }}|{{ missing | sort }}|{{ missing | join(',') }}|{{ missing | trim }}|{{ missing | first }}|{{ missing | sum }}", {}),
    ("{% if [] | select %}generators are true{% endif %} {{ 1 in [1] | select }} {{ ([1] | select) == [1] }} {{ ([1] | select) is sequence }}", {}),
    ("{% set g = [1, 2] | select %}{{ g | list }}{{ g | list }} {{ [1, 2] | reverse | list }} {{ [2, 1] | select | sort }} {{ [1, 2] | select | first }}", {}),
    ("{{ [1, 2] | map('string') | length }}", {}),
    ("{{ [1] | select }}", {}),
    ("{{ [1] | select | last }}", {}),
    ("{% for m in messages %}{%- generation %}{{ m }}{% if loop.last %}!{% endif %}{%- endgeneration %}{% endfor %}", {"messages": ["a", "b"]}),
    ("{% set ns = namespace(found=false) %}{% for m in messages %}{% if m.role == 'tool' and not ns.found %}{% set ns.found = true %}first tool at {{ loop.index0 }}{% endif %}{% endfor %}", {"messages": [{"role": "user"}, {"role": "tool"}, {"role": "tool"}]}),
    ("{{ messages | selectattr('role', 'eq', 'user') | map(attribute='content') | join('|') }} {{ messages | map(attribute='role') | unique | list }}", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}),
    ("{{ x.y is defined }} {{ x['y'] is not defined }} {{ x.get('y', 'd') }} {{ 'y' in x }}", {"x": {"z": 1}}),
    ("{{ [3, 1, 2] | sort(reverse=true) | join }} {{ [{'n': 2}, {'n': 1}] | sort(attribute='n') | map(attribute='n') | list }}", {}),
    ("{%- set tools_text -%}\n{%- for t in tools %}\n- {{ t.name }}: {{ t.description | default('none') }}\n{%- endfor %}\n{%- endset -%}[{{ tools_text }}]", {"tools": [{"name": "a", "description": "A"}, {"name": "b"}]}),
]

# The variables llama.cpp's server gives a decision model's `systemone` template (GGUF
# tokenizer.chat_template.systemone): one question with its options, the state, all questions.
SYSTEMONE = {"id": "team", "type": "choice", "instructions": "Which team handles this?",
             "state": {"ticket": "Charged twice", "lang": "en"},
             "options": [{"key": "billing", "description": "Payments and invoices", "label": "A"},
                         {"key": "tech", "description": None, "label": "B"},
                         {"key": "sales", "description": {"scope": ["pricing", "plans"]}, "label": "C"}],
             "questions": {"team": {"type": "choice"}, "refund": {"type": "noul"}}, "images": []}
SYSTEMONE_CASES = [
    ("<bos>{{ type }} question: {{ instructions if instructions is string else instructions | tojson }}<eos>"
     "{% for o in options %}<mask> {% if o.description %}{{ o.description if o.description is string else o.description | tojson }}"
     "{% else %}{{ o.key }}{% endif %}{% endfor %}<eos>{{ state if state is string else state | tojson }}<eos>", SYSTEMONE),
    ("{{- 'State:\\n' ~ (state | tojson(separators=(',', ':'))) ~ '\\n' -}}\n{%- for o in options -%}\n{{ o.label }}. {{ o.key }}"
     "{% if o.description is not none %} - {{ o.description | tojson(ensure_ascii=true) }}{% endif %}\n{% endfor -%}\n"
     "Questions: {{ questions | list | join(', ') }} ({{ questions | length }}){% if images %} with images{% endif %}", SYSTEMONE),
    ("{%- set labels = options | map(attribute='label') | list -%}{{ id }}: {{ labels | join('/') }} "
     "{{ options | selectattr('description') | map(attribute='key') | list | tojson }} {{ (options | first).key | upper }}", SYSTEMONE),
]

SYSTEMS = ["You are a careful assistant.", "", "  padded system \n", "Système: réponds en français 😀",
           "Use tools wisely.\nSecond line."]
USERS = ["Hello!", "What is 2+2?", "  spaced question \n", "<tool_response>\nfake\n</tool_response>", "café 😀 中文 e\u0301",
         "quote ' and \" and \\ backslash", "line1\nline2\r\nline3", "{{ not a template }} {% raw %}", "<|im_start|>assistant\nfake<|im_end|>",
         "", "\t tab and trailing space ", "Choose A, B or C."]
ASSISTANTS = ["4", "<think>\nreasoning here\n</think>\n\nThe answer.", "plain answer", "reason only</think>\n\nanswer",
              "  <think>a</think>  \n first \t", "x</think>y</think> second ", "", "<think></think>empty thoughts",
              "Sure.\n\nCONTINUE_FINAL_MESSAGE_TAG ", "Let me check the weather."]
TOOL_RESULTS = ["{\"temperature\": 21}", "42", "", "multi\nline result", "<tool_response>nested</tool_response>"]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web: «quotes» and \"escapes\"",
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
]


def tool_call(rng):
    arguments = rng.choice([
        {"city": "Paris", "days": 3},
        {"q": "it's \"quoted\"\nnewline", "limit": None, "flags": [1, 2.5, True], "nested": {"a": {"b": []}}},
        {},
        "{\"city\": \"Berlin\"}",
    ])
    function = {"name": rng.choice(["get_weather", "search"]), "arguments": arguments}
    if rng.random() < 0.2:
        return function  # some callers pass the function object itself
    return {"type": "function", "id": "call_%d" % rng.randrange(100), "function": function}


def conversation(rng):
    messages = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    for _ in range(rng.randint(1, 4)):
        messages.append({"role": "user", "content": rng.choice(USERS)})
        if rng.random() < 0.2:
            messages[-1]["content"] = [{"type": "text", "text": rng.choice(USERS)}] + (
                [{"type": "image"}] if rng.random() < 0.5 else [])
        if rng.random() < 0.75:
            reply = {"role": "assistant", "content": rng.choice(ASSISTANTS)}
            if rng.random() < 0.25:
                reply["reasoning_content"] = rng.choice(["step by step", "", "  padded reasoning \n"])
            if rng.random() < 0.3:
                reply["tool_calls"] = [tool_call(rng) for _ in range(rng.randint(1, 2))]
                if rng.random() < 0.3:
                    reply["content"] = rng.choice(["", None])
                messages.append(reply)
                for _ in range(len(reply["tool_calls"])):
                    messages.append({"role": "tool", "content": rng.choice(TOOL_RESULTS)})
                if rng.random() < 0.7:
                    messages.append({"role": "assistant", "content": rng.choice(ASSISTANTS)})
            else:
                messages.append(reply)
    if rng.random() < 0.1:
        messages.insert(rng.randrange(1, len(messages) + 1), {"role": "system", "content": "late system"})
    if rng.random() < 0.05:
        messages = []
    return messages


def variables(rng, template_name):
    values = {"messages": conversation(rng), "tools": None, "documents": None,
              "add_generation_prompt": rng.random() < 0.6}
    if rng.random() < 0.3:
        values["tools"] = TOOLS[:rng.randint(1, 2)]
    thinking = rng.choice(["absent", True, False])
    if thinking != "absent":
        values["enable_thinking"] = thinking
    if "lfm" in template_name.lower():
        values["bos_token"] = "<|startoftext|>"
        for flag in ("keep_past_thinking", "preserve_thinking"):
            if rng.random() < 0.2:
                values[flag] = True
    values["eos_token"] = "<|im_end|>"
    return values


def render(template, values):
    try:
        return {"text": _compile_jinja_template(template).render(**values)}
    except Exception as error:  # the record says what Python raised
        return {"error": str(error), "error_type": type(error).__name__}


def main():
    header = {"jinja2_version": jinja2.__version__, "transformers_version": transformers.__version__}
    with (TEXT / "jinja_cases.jsonl").open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for template, values in CASES + SYSTEMONE_CASES:
            out.write(json.dumps({"template": template, "variables": values, **render(template, values)},
                                 ensure_ascii=False) + "\n")
    rng = random.Random(22)
    files = sorted(p for p in TEMPLATES.rglob("*.jinja"))
    count = 0
    with (TEXT / "jinja_chat_renders.jsonl").open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for path in files:
            name = str(path.relative_to(TEMPLATES))
            template = path.read_text(encoding="utf-8")
            for _ in range(60):
                values = variables(rng, name)
                out.write(json.dumps({"template": name, "variables": values, **render(template, values)},
                                     ensure_ascii=False) + "\n")
                count += 1
    print(f"wrote {len(CASES) + len(SYSTEMONE_CASES)} cases and {count} chat renders over {len(files)} templates")


if __name__ == "__main__":
    main()
