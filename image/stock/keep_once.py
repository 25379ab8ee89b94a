# keep's runner for a plain python execute (docs/contexts.md, "Results of
# a plain execute"): the front runs `python -c <this file> NONCE CODE`.
# CODE runs as `python -c CODE` would (as __main__, sys.argv ["-c"], its
# tracebacks, exit status and SystemExit unchanged); then the value of
# its last expression and the matplotlib figures it left open go to
# stderr as one line "\x1ekeep-results:NONCE:<JSON array>\n", which the
# front takes out of stderr and returns as `results`. Only modules built
# into the interpreter are imported here, so a run pays next to nothing.
import sys


def _keep_once():
    import _ast

    TEXT_MAX = 64 << 10
    IMAGE_MAX = 4 << 20
    nonce, code = sys.argv[1], sys.argv[2]
    del sys.argv[1:]
    g = globals()
    del g["_keep_once"]
    try:
        tree = compile(code, "<string>", "exec", _ast.PyCF_ONLY_AST)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
            last = compile(last, "<string>", "eval")
        body = compile(tree, "<string>", "exec")
    except (SyntaxError, ValueError) as e:
        e.__traceback__ = None
        sys.excepthook(type(e), e, None)
        sys.exit(1)
    del code, tree
    try:
        exec(body, g)
        value = eval(last, g) if last is not None else None
    except SystemExit:
        raise
    except BaseException as e:
        # The first frame is this function's, not the code's.
        e.__traceback__ = e.__traceback__.tb_next
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)
    # Most runs have nothing to report: the helpers below are made only
    # for those that do (in a template's clone each object made costs).
    plt = sys.modules.get("matplotlib.pyplot")
    if value is None and plt is None:
        return

    esc = {i: "\\u%04x" % i for i in range(32)}
    esc[ord('"')] = '\\"'
    esc[ord("\\")] = "\\\\"

    def enc(v, depth=0):
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None or depth > 20:
            return "null"
        if isinstance(v, str):
            v = v.encode("utf-8", "replace").decode("utf-8")
            return '"' + v.translate(esc) + '"'
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return repr(v) if v == v and v not in (float("inf"),
                                                   float("-inf")) else "null"
        if isinstance(v, (list, tuple)):
            return "[" + ",".join(enc(x, depth + 1) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ",".join(enc(str(k)) + ":" + enc(x, depth + 1)
                                  for k, x in v.items()) + "}"
        return enc(repr(v))

    def clip(s):
        return s if len(s) <= TEXT_MAX else s[:TEXT_MAX] + "\n[truncated]"

    def b64(data):
        import binascii
        return binascii.b2a_base64(data, newline=False).decode("ascii")

    def figure_png(fig):
        import io
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        data = buf.getvalue()
        return b64(data) if len(data) <= IMAGE_MAX else None

    def represent(v, main):
        r = {"is_main_result": main}
        try:
            r["text"] = clip(repr(v))
        except Exception as e:
            r["text"] = "<repr failed: %s>" % type(e).__name__
        for attr, key in (("_repr_html_", "html"),
                          ("_repr_markdown_", "markdown"),
                          ("_repr_svg_", "svg"),
                          ("_repr_latex_", "latex")):
            f = getattr(v, attr, None)
            if callable(f):
                try:
                    s = f()
                    if isinstance(s, str):
                        r[key] = clip(s)
                except Exception:
                    pass
        for attr, key in (("_repr_png_", "png"), ("_repr_jpeg_", "jpeg")):
            f = getattr(v, attr, None)
            if callable(f):
                try:
                    s = f()
                    if isinstance(s, bytes) and len(s) <= IMAGE_MAX:
                        r[key] = b64(s)
                except Exception:
                    pass
        f = getattr(v, "_repr_json_", None)
        if callable(f):
            try:
                r["json"] = f()
            except Exception:
                pass
        if type(v).__name__ == "Figure" and \
                type(v).__module__.startswith("matplotlib"):
            png = figure_png(v)
            if png is not None:
                r["png"] = png
        return r

    results = []
    try:
        if plt is not None:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                r = {"is_main_result": False, "text": clip(repr(fig))}
                png = figure_png(fig)
                if png is not None:
                    r["png"] = png
                results.append(r)
            plt.close("all")
        if value is not None:
            results.append(represent(value, True))
    except Exception:
        pass
    if results:
        sys.stdout.flush()
        sys.stderr.write("\x1ekeep-results:" + nonce + ":" + enc(results) +
                         "\n")
        sys.stderr.flush()


_keep_once()
