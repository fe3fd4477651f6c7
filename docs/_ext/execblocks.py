"""``{exec-python}``: a code block that runs while the documentation is built.

In a MyST page::

    ```{exec-python}
    import popdyn
    print(popdyn.__version__)
    ```

renders the code, then what it printed.  The blocks of one page run in order in one namespace,
in a fresh temporary working directory (files they write never land in the checkout); an
exception stops the build (``sphinx.errors.ExtensionError`` naming the page and the block), so a
build that passes has run every such block as written.  ``tests/test_docs.py`` recognizes the
same blocks (it does not run them a second time when the build test runs them).
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
import traceback

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

#: per page: (namespace, working directory, seconds spent)
_PAGES: dict = {}


class ExecPython(SphinxDirective):
    has_content = True
    required_arguments = 0
    optional_arguments = 0
    option_spec = {}

    def run(self):
        doc = self.env.docname
        code = "\n".join(self.content)
        ns, cwd, spent = _PAGES.get(doc) or ({"__name__": f"__docs_{doc.replace('/', '_')}__"},
                                             tempfile.mkdtemp(prefix="popdyn-docs-"), 0.0)
        out = io.StringIO()
        old = os.getcwd()
        t0 = time.process_time()
        try:
            os.chdir(cwd)
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"<{doc}: exec-python block at line {self.lineno}>", "exec"), ns)
        except Exception as exc:  # the build must fail, naming the block
            raise ExtensionError(f"{doc}: the exec-python block at line {self.lineno} raised "
                                 f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc
        finally:
            os.chdir(old)
        _PAGES[doc] = (ns, cwd, spent + time.process_time() - t0)
        block = nodes.literal_block(code, code)
        block["language"] = "python"
        result = [block]
        text = out.getvalue().rstrip("\n")
        if text:
            o = nodes.literal_block(text, text)
            o["language"] = "text"
            o["classes"].append("exec-output")
            result.append(o)
        return result


def _purge(app, env, docname):
    _PAGES.pop(docname, None)


def _cleanup(app, exception):
    import shutil
    for doc in list(_PAGES):
        shutil.rmtree(_PAGES.pop(doc)[1], ignore_errors=True)


def setup(app):
    app.add_directive("exec-python", ExecPython)
    app.connect("env-purge-doc", _purge)
    app.connect("build-finished", _cleanup)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
