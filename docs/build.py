"""Build the clinseg docs site offline, and README.md: `python docs/build.py` (repo root, inside the venv).

1. Every notebook of `nbs/` is copied to `_proc/src/` (named as nbdev names its page: `02_rle.ipynb` -> `rle`) and
   executed with execnb, as the tests run it: a fresh process per notebook (2 at a time), working directory = the
   notebook's folder, cells flagged with settings.ini's `tst_flags` (`#| slow`, `#| notest`) skipped.
   A failing cell fails the build, naming the notebook and the cell.
2. nbdev's own docs processing (`nbdev.processors.FilterDefaults`, as `nbdev_proc_nbs` does): `show_doc`
   signatures with their parameter comments, `#| hide`, export directives removed. One change: show_doc is
   rendered in the shell that ran the whole notebook, not in a second one (see `filter_in`). Then the quarto
   cell options nbdev leaves for quarto become myst-nb cell tags (`echo: false` -> `remove-input`, ...), and
   links to notebooks or to clinseg's API become links between the site's pages.
3. Sphinx + myst-nb (no execution) + sphinx-book-theme write `_site/` (conf.py beside this file); math uses the
   MathJax 2 of the `jupyter-server-mathjax` package, copied into the site. `README.md` is written from the
   processed `nbs/index.ipynb`.
4. Checks: a page per notebook, the home page, search, every exported function or class documented, each
   show_doc signature (with its parameter comments) present in its page, links between pages, and no URL that a
   page would load from another host (tags that load, inline scripts, stylesheets). Widgets need a kernel: on the
   site each is a note followed by its static figure, and no widget JavaScript is shipped. Exits non-zero with the
   reason otherwise.

Options: `--jobs N` notebooks executed at once (default 2), `--no-readme` to leave README.md alone.
"""
import argparse, ast, copy, html, json, os, re, shutil, sys, time, warnings
import subprocess
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROC, SITE = ROOT / '_proc', ROOT / '_site'
SRC = PROC / 'src'                     # Sphinx's source folder: the executed, processed notebooks
README_NOTE = '<!-- Generated from nbs/index.ipynb by `python docs/build.py`: edit the notebook, not this file. -->'
WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json'
CELL_TIMEOUT = int(os.environ.get('CLINSEG_CELL_TIMEOUT', '600'))   # seconds for one cell, a safety net


class BuildError(Exception): "A reason to stop the build, with a message for the person who ran it"

def _rel(p):
    "`p` relative to the repository, for messages"
    try: return Path(p).resolve().relative_to(ROOT).as_posix()
    except ValueError: return str(p)


# ---------------------------------------------------------------- which notebooks, which pages
ANSWER_KEYS = 'exercises'               # nbs/exercises/: the teacher's answer keys, tested but never published

def find_notebooks(nbs):
    """Notebooks nbdev would process (nbglob: `_`/`.` files and folders skipped), chapters then tutorials, by file
    name; the answer keys are left out (the site shows the student edition's text)"""
    from nbdev.doclinks import nbglob
    nbs_ = [p.resolve() for p in nbglob(nbs, as_path=True)
            if Path(p).resolve().relative_to(nbs.resolve()).parts[0] != ANSWER_KEYS]
    return sorted(nbs_, key=lambda p: (len(p.relative_to(nbs).parts) > 1, str(p.relative_to(nbs))))

def page_of(nb, nbs):
    "Page path without suffix, as nbdev names it (`02_rle.ipynb` -> `rle`, `tutorials/02_x.ipynb` -> `tutorials/x`)"
    from nbdev.doclinks import _nbpath2html
    return _nbpath2html(nb.relative_to(nbs)).with_suffix('').as_posix()


# ---------------------------------------------------------------- 1. execute (in a worker process, one per notebook)
def _code_only(cell):
    "The cell's source without its leading `#|` directive lines, and its directives (as nbdev parses them)"
    from nbdev.process import extract_directives
    c = copy.deepcopy(cell)
    dirs = extract_directives(c, remove=True)
    return c.source, dirs

def keep_widget_outputs():
    """Without a front end, what an ipywidgets `Output` captures leaks into the cell that ran it (a test cell that
    clicks a widget would show its figure). Keep it in the widget instead, as JupyterLab does: the embedded widget
    state then holds it, and the page shows each figure where the notebook shows it."""
    try: from ipywidgets import Output
    except ImportError: return
    from base64 import b64encode
    from IPython.utils.capture import capture_output
    enter, leave = Output.__enter__, Output.__exit__
    def _data(d): return {k: b64encode(v).decode() if isinstance(v, bytes) else v for k, v in d.items()}
    def __enter__(self):
        cap = capture_output()
        self.__dict__.setdefault('_docs_captures', []).append((cap, cap.__enter__()))
        return enter(self)
    def __exit__(self, etype, evalue, tb):
        res = leave(self, etype, evalue, tb)          # an error inside is shown (captured here too), as ipywidgets does
        cap, got = self._docs_captures.pop()
        cap.__exit__(None, None, None)
        outs = [dict(output_type='stream', name=n, text=t) for n,
                t in (('stdout', got.stdout), ('stderr', got.stderr)) if t]
        outs += [dict(output_type='display_data', data=_data(o.data), metadata=o.metadata or {}) for o in got.outputs]
        if outs: self.outputs += tuple(outs)
        return res
    def clear_output(self, *args, **kwargs): self.outputs = ()
    Output.__enter__, Output.__exit__, Output.clear_output = __enter__, __exit__, clear_output

def execute(nb, src, skip_flags):
    ("Run `nb`'s code cells in order as `nbdev.test.test_nb` does, storing the outputs; raise BuildError at the "
     "first failure")
    # the shell is returned: show_doc cells that nbdev adds are rendered in it, with the whole notebook's state
    from execnb.nbio import _dict2obj
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    keep_widget_outputs()
    if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))     # as test_nb's basepath: this repo's clinseg
    shell = CaptureShell(src, timeout=CELL_TIMEOUT)
    with working_directory(src.parent):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != 'code': continue
            code, dirs = _code_only(cell)
            if 'nbdev_export' + '(' in code: continue
            if dirs.get('eval:', [''])[0].lower() == 'false' or set(skip_flags) & dirs.keys(): continue
            try: outs = shell.run(code)
            except TimeoutError: raise BuildError(f'{_rel(src)}, cell {i + 1}: did not finish in {CELL_TIMEOUT} s')
            cell.outputs = _dict2obj(outs)
            if shell.exc is not None:
                tb = ''.join(next((o['traceback'] for o in outs if o['output_type'] == 'error'), [])) or repr(shell.exc)
                raise BuildError(f'{_rel(src)}, cell {i + 1} (counting every cell from 1) failed:\n'
                                 f'--- cell source ---\n{cell.source}\n--- error ---\n{tb}')
    return shell


# ---------------------------------------------------------------- 2. nbdev's processing, then quarto options ->
# myst-nb tags
_re_opt = re.compile(r'^\s*#\|\s*([\w-]+)\s*:\s*(.*?)\s*$')
_OPT_TAGS = {('echo', 'false'): 'remove-input', ('output', 'false'): 'remove-output',
             ('include', 'false'): 'remove-cell', ('output', 'asis'): 'output-asis',
             ('code-fold', 'true'): 'hide-input'}

def quarto_to_tags(cell):
    "Turn the quarto options nbdev leaves at the top of a code cell (`#| echo: false`...) into myst-nb cell tags"
    if cell.cell_type != 'code': return
    lines = cell.source.splitlines(True)
    n = 0
    while n < len(lines) and _re_opt.match(lines[n]): n += 1
    opts = {m.group(1).lower(): m.group(2).strip('"\'').lower() for m in map(_re_opt.match, lines[:n])}
    cell.source = ''.join(lines[n:]).strip('\n')
    tags = [t for (k, v), t in _OPT_TAGS.items() if opts.get(k) == v]
    if any(WIDGET_VIEW in o.get('data', {}) for o in cell.get('outputs', [])): tags.append('clinseg-widget')
    if tags: cell.metadata['tags'] = list(dict.fromkeys(list(cell.metadata.get('tags', [])) + tags))

def frontmatter_cell(nb):
    "nbdev turns the notebook's `# Title` / `> description` cell into quarto front matter: read it back"
    from nbdev.frontmatter import _fm2dict
    if nb.cells and nb.cells[0].cell_type == 'raw':
        fm = _fm2dict(nb.cells[0].source)
        if fm:
            nb.cells.pop(0)
            return fm
    return {}

def filter_in(shell):
    """nbdev's `FilterDefaults`, whose `exec_show_docs` renders show_doc in `shell`, where the whole notebook ran.

    nbdev's own `exec_show_docs` starts a second shell running only the export cells and the cells with an
    import; a cell mixing an import with other code then fails there. The notebook has run already: use it."""
    from nbdev.processors import FilterDefaults, exec_show_docs, _show_docs
    class exec_show_docs(exec_show_docs):   # same name, so settings.ini's skip_procs still applies
        def begin(self): shell.run('from nbdev.showdoc import show_doc')
        def __call__(self, cell):
            if cell.cell_type != 'code' or not self.nb.has_docs_ or not cell.source: return
            if not _show_docs(cell.parsed_() or []): return
            shell.cell(cell)
            if shell.exc is not None: raise BuildError(f'show_doc failed in cell:\n{cell.source}\n{shell.exc!r}')
    class Filter(FilterDefaults):
        def base_procs(self):
            return [exec_show_docs if p.__name__ == 'exec_show_docs' else p for p in super().base_procs()]
    return Filter()

def process(nb, src, shell):
    "nbdev's docs processing (`FilterDefaults`, as `nbdev_proc_nbs`), then the tags; returns (nb, front matter, notes)"
    from fastcore.xtras import working_directory
    with warnings.catch_warnings(record=True) as caught, working_directory(src.parent):
        warnings.simplefilter('always')
        in_test = os.environ.get('IN_TEST')
        os.environ['IN_TEST'] = '1'            # as nbdev_proc_nbs runs the processors
        try: filter_in(shell)(nb)
        except BuildError as e: raise BuildError(f"{_rel(src)}: nbdev's docs processing failed: {e}")
        except Exception as e: raise BuildError(f"{_rel(src)}: nbdev's docs processing failed: {type(e).__name__}: {e}")
        finally:
            if in_test is None: del os.environ['IN_TEST']
            else: os.environ['IN_TEST'] = in_test
    fm = frontmatter_cell(nb)
    for cell in nb.cells:
        quarto_to_tags(cell)
        tidy_outputs(cell)
    widgets_offline(nb)
    nb.cells = [c for c in nb.cells if not (c.cell_type == 'code' and 'remove-input' in c.metadata.get('tags', [])
                                            and not c.get('outputs'))]
    return nb, fm, [str(w.message).split('\n')[0] for w in caught]


# ---------------------------------------------------------------- links: notebook links -> pages; nbdev's doc links ->
# local
_re_md_link = re.compile(r'(\]\()([^)\s]+?\.ipynb)(#[^)\s]*)?(\))')

def link_rewriter(page, pages, src, nbs, doc_url):
    "A function rewriting one markdown text's links for the page `page` (relative page links, offline)"
    from docutils.nodes import make_id
    up = '../' * page.count('/')
    def nb_link(m):
        target = (src.parent / m.group(2)).resolve()
        if target not in pages: return m.group(0)
        rel = os.path.relpath(pages[target] + '.html', start=os.path.dirname(page) or '.')
        return f'{m.group(1)}{rel}{m.group(3) or ""}{m.group(4)}'
    own = re.compile(r'\[`([^`\]]+)`\]\(' + re.escape(doc_url) + r'([^)#\s]*)(?:#([^)\s]*))?\)')
    def own_link(m):   # nbdev's linkified `name` -> a local link; docutils' id of the show_doc heading
        if re.match(r'_[^_]', (m.group(3) or '').split('.')[-1]): return f'`{m.group(1)}`'   # private: not documented
        anchor = f'#{make_id(m.group(3))}' if m.group(3) else ''
        return f'[`{m.group(1)}`]({up}{m.group(2)}{anchor})'
    return lambda text: own.sub(own_link, _re_md_link.sub(nb_link, text))

_re_fence = re.compile(r'```python\n.*?\n```', re.S)
_re_code_link = re.compile(r'\[(`[^`\]]+`)\]\([^)\s]*\)')

def tidy_outputs(cell):
    """Blank stream outputs go. In show_doc outputs: the leading `---` rule goes (a docutils transition cannot sit
    in an output; CSS draws it), and the links nbdev adds inside the signature's code block are unwrapped"""
    if cell.get('outputs'):
        cell.outputs = [o for o in cell.outputs if not (o.get('output_type') == 'stream'
                                                        and not ''.join(o.get('text', '')).strip())]
    if 'show_doc' not in cell.source: return
    for o in cell.get('outputs', []):
        md = o.get('data', {}).get('text/markdown')
        if not md: continue
        md = re.sub(r'\A\s*---\s*\n', '', ''.join(md))
        md = _re_fence.sub(lambda m: _re_code_link.sub(r'\1', m.group(0)), md)
        o['data']['text/markdown'] = md.splitlines(True)

WIDGET_NOTE = ('*An interactive widget: it needs Python running behind it, so open this notebook in JupyterLab to use '
               'it. '
               'The figure after it shows the same.*')

def widgets_offline(nb):
    """A widget needs a kernel: on the site each widget output becomes a note (the static figure after it stays),
    and no widget state is kept, so no page loads the widget manager or require.js"""
    for cell in nb.cells:
        outs = cell.get('outputs', [])
        for i, o in enumerate(outs):
            if WIDGET_VIEW in o.get('data', {}):
                outs[i] = dict(output_type='display_data', metadata={}, data={'text/markdown': WIDGET_NOTE})
    nb.metadata.pop('widgets', None)

def rewrite_links(nb, rewrite):
    for cell in nb.cells:
        if cell.cell_type == 'markdown': cell.source = rewrite(cell.source)
        for o in cell.get('outputs', []):
            md = o.get('data', {}).get('text/markdown')
            if md: o['data']['text/markdown'] = rewrite(''.join(md)).splitlines(True)


# ---------------------------------------------------------------- what each chapter must show: its API
def exported_names(nb):
    "Public functions and classes defined at the top level of the notebook's `#| export(s)` cells"
    names = []
    for cell in nb.cells:
        if cell.cell_type != 'code': continue
        code, dirs = _code_only(cell)
        if not {'export', 'exports'} & dirs.keys() or 'hide' in dirs: continue
        try: tree = ast.parse(code)
        except SyntaxError: continue
        names += [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and not n.name.startswith('_')]
    return names

_re_sd_head = re.compile(r'^#+\s+(\S+)\s*$', re.M)
_re_sd_code = re.compile(r'```python\n(.*?)\n```', re.S)

def rendered_docs(nb):
    "{name: signature text} of every show_doc output (nbdev writes a heading and the signature with its comments)"
    docs = {}
    for cell in nb.cells:
        if cell.cell_type != 'code' or 'show_doc' not in cell.source: continue
        for o in cell.get('outputs', []):
            md = ''.join(o.get('data', {}).get('text/markdown', []))
            h, c = _re_sd_head.search(md), _re_sd_code.search(md)
            if h and c: docs[h.group(1)] = c.group(1)
    return docs


# ---------------------------------------------------------------- README (GitHub markdown) from the processed index
def readme_text(nb, fm, src, nbs, pages, doc_url):
    """README.md: the notebook's markdown as is, code as ```python blocks, text outputs as ``` blocks; links to
    notebooks and nbdev's links to an API entry's page point at the notebooks in the repository"""
    nb_dir = src.parent.relative_to(nbs.parent).as_posix()
    page_nb = {page: nb.relative_to(nbs.parent).as_posix() for nb, page in pages.items()}
    own = re.compile(r'\[`([^`\]]+)`\]\(' + re.escape(doc_url) + r'([^)#\s]*)\.html(?:#[^)\s]*)?\)')
    def own_link(m): return f'[`{m.group(1)}`]({page_nb[m.group(2)]})' if m.group(2) in page_nb else f'`{m.group(1)}`'
    def md_link(m): return f'{m.group(1)}{nb_dir}/{m.group(2)}{m.group(3) or ""}{m.group(4)}'
    def relink(s): return own.sub(own_link, _re_md_link.sub(md_link, s))
    parts = [README_NOTE]
    if fm.get('title'): parts.append(f"# {fm['title']}")
    if fm.get('description'): parts.append(f"> {fm['description']}")
    for cell in nb.cells:
        tags = cell.get('metadata', {}).get('tags', [])
        if 'remove-cell' in tags or cell.source.startswith('<!-- WARNING: THIS FILE WAS AUTOGENERATED'): continue
        if cell.cell_type == 'markdown': parts.append(relink(cell.source.strip()))
        if cell.cell_type != 'code': continue
        if cell.source.strip() and 'remove-input' not in tags: parts.append(f'```python\n{cell.source.strip()}\n```')
        if 'remove-output' in tags: continue
        for o in cell.get('outputs', []):
            data = o.get('data', {})
            if o.get('output_type') == 'stream':          # stdout only: warnings are not for the README
                if o.get('name') != 'stdout': continue
                text = ''.join(o['text'])
            elif 'text/markdown' in data:
                parts.append(relink(''.join(data['text/markdown']).strip()))
                continue
            elif any(k.startswith('image/') or k == WIDGET_VIEW for k in data): continue   # figures stay on the site
            elif 'text/plain' in data: text = ''.join(data['text/plain'])
            else: continue
            if text.strip(): parts.append(f'```\n{text.rstrip()}\n```')
    return '\n\n'.join(parts) + '\n'


# ---------------------------------------------------------------- one notebook, start to end (runs in a worker)
def build_notebook(job):
    "Copy, execute, process one notebook; write it to `_proc/src/<page>.ipynb`. Returns a dict (never raises)"
    src, page, nbs, doc_url, skip_flags, want_readme = (job[k] for k in
                                                        ('src', 'page', 'nbs', 'doc_url', 'skip_flags', 'readme'))
    src, nbs = Path(src), Path(nbs)
    pages = {Path(k): v for k, v in job['pages'].items()}
    from execnb.nbio import mk_cell, read_nb, write_nb
    t0 = time.time()
    try:
        dst = SRC / f'{page}.ipynb'
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        nb = read_nb(dst)
        api = exported_names(nb)
        shell = execute(nb, src, skip_flags)
        nb, fm, warns = process(nb, src, shell)
        readme = readme_text(copy.deepcopy(nb), fm, src, nbs, pages, doc_url) if want_readme else None
        rewrite_links(nb, link_rewriter(page, pages, src, nbs, doc_url))
        title = fm.get('title') or src.stem
        head = [f'# {title}'] + ([f'{{.lead}}\n{fm["description"]}'] if fm.get('description') else [])
        nb.cells.insert(0, mk_cell('\n\n'.join(head), cell_type='markdown'))
        for i, cell in enumerate(nb.cells): cell['id'] = f'cell-{i}'
        nb.metadata.setdefault('kernelspec', dict(display_name='Python 3', language='python', name='python3'))
        nb.metadata['language_info'] = dict(name='python', pygments_lexer='ipython3')
        write_nb(nb, dst)
        return dict(ok=True, src=str(src), page=page, title=title, api=api, docs=rendered_docs(nb), readme=readme,
                    warnings=warns, secs=time.time() - t0)
    except BuildError as e: return dict(ok=False, src=str(src), error=str(e))
    except Exception as e:
        import traceback
        return dict(ok=False, src=str(src), error=f'{_rel(src)}: {type(e).__name__}: {e}\n{traceback.format_exc()}')


def run_worker(job):
    """`build_notebook` in a fresh `python` process, as conftest.py runs each notebook's test: its own kernel state,
    widgets and matplotlib, and a plain `__main__` (a notebook may start its own process pool)"""
    job_file = PROC / 'jobs' / f"{job['page'].replace('/', '__')}.json"
    job_file.parent.mkdir(parents=True, exist_ok=True)
    job_file.write_text(json.dumps(job), encoding='utf-8')
    res = subprocess.run([sys.executable, __file__, '--worker', str(job_file)], cwd=ROOT, capture_output=True,
                         text=True)
    out = job_file.with_suffix('.out.json')
    if out.exists(): return json.loads(out.read_text(encoding='utf-8'))
    return dict(ok=False, src=job['src'],
                error=f"{_rel(Path(job['src']))}: the worker process died (exit {res.returncode}):\n"
                                                  f"{res.stderr[-5000:]}")

def run_all(jobs, n):
    "Every job in a worker, `n` at a time, a line as each notebook finishes; results in the jobs' order"
    done = {}
    with ThreadPoolExecutor(max(1, n)) as ex:
        futures = {ex.submit(run_worker, job): i for i, job in enumerate(jobs)}
        for k, f in enumerate(as_completed(futures), 1):
            r = done[futures[f]] = f.result()
            state = f"{r['secs']:5.1f} s" if r['ok'] else 'FAILED'
            print(f"  [{k:2}/{len(jobs)}] {_rel(Path(r['src'])):42} {state}", flush=True)
    return [done[i] for i in range(len(jobs))]

def worker_main(job_file):
    job_file = Path(job_file)
    res = build_notebook(json.loads(job_file.read_text(encoding='utf-8')))
    job_file.with_suffix('.out.json').write_text(json.dumps(res), encoding='utf-8')


# ---------------------------------------------------------------- 3. the site
def toctree(caption, pages):
    return f'```{{toctree}}\n:hidden:\n:caption: {caption}\n:maxdepth: 1\n\n' + '\n'.join(pages) + '\n```'

def add_toctrees(index_nb, chapters, tutorials):
    "The sidebar: chapters in file-name order, then tutorials (hidden toctrees on the home page)"
    nb = json.loads(index_nb.read_text(encoding='utf-8'))
    for caption, pages in (('Chapters', chapters), ('Tutorials', tutorials)):
        if pages: nb['cells'].append(dict(cell_type='markdown', id=f'toctree-{caption.lower()}', metadata={},
                                          source=toctree(caption, pages)))
    index_nb.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding='utf-8')

def copy_mathjax():
    "MathJax 2 from the `jupyter-server-mathjax` package into the site's static files (no CDN)"
    try: import jupyter_server_mathjax
    except ImportError: raise BuildError('jupyter-server-mathjax is not installed: pip install -e ".[dev]"')
    mj = Path(jupyter_server_mathjax.__file__).parent / 'static'
    if not (mj / 'MathJax.js').exists(): raise BuildError(f'no MathJax.js in {mj}')
    shutil.copytree(mj, PROC / 'static' / 'mathjax')

def run_sphinx(jobs):
    from sphinx.cmd.build import build_main
    warn_file = PROC / 'sphinx-warnings.txt'
    args = ['-b', 'html', '-c', str(ROOT / 'docs'), '-d', str(PROC / 'doctrees'), '-q', '-w', str(warn_file),
            '-j', str(jobs), str(SRC), str(PROC / 'html')]
    code = build_main(args)     # into _proc/html: myst-nb keeps its files beside the output folder, in _proc
    warns = ([l for l in warn_file.read_text(encoding='utf-8').splitlines() if 'WARNING' in l or 'ERROR' in l]
             if warn_file.exists() else [])
    if code: raise BuildError(f'sphinx-build failed (exit {code}):\n' + '\n'.join(warns[-30:]))
    shutil.move(PROC / 'html', SITE)
    (SITE / '.nojekyll').touch()     # GitHub Pages: serve the `_static` folders as they are
    return warns


# ---------------------------------------------------------------- 4. checks
_re_tag = re.compile(r'<[^>]+>')
_re_remote = re.compile(r'<(script|link|img|iframe|source|embed|audio|video)\b[^>]*?\b(?:src|href)\s*=\s*'
                        r'["\']?((?:https?:)?//[^"\'\s>]+)', re.I)
_re_css_remote = re.compile(r'(?:url\(\s*["\']?|@import\s+["\'])((?:https?:)?//[^"\')\s]+)', re.I)

def squeeze(text): return re.sub(r'\s+', '', text)

def page_text(p):
    "The text of a page, tags removed, entities decoded, without any whitespace (code is split into spans)"
    return squeeze(html.unescape(_re_tag.sub('', p.read_text(encoding='utf-8'))))

_re_script = re.compile(r'<script\b[^>]*>(.*?)</script>', re.S | re.I)
_re_js_remote = re.compile(r'["\'`]((?:https?:)?//[\w.-]+\.[a-z]{2,}[^"\'`\s]*)', re.I)

def remote_urls(site):
    """Every URL to another host that a page would load, by file: the src/href of tags that load (not <a> links),
    URLs in inline scripts' strings (require.js paths, widget managers) and in stylesheets"""
    found = {}
    for p in sorted(site.rglob('*.html')):
        text = p.read_text(encoding='utf-8')
        urls = [u for _, u in _re_remote.findall(text)]
        for script in _re_script.findall(text): urls += _re_js_remote.findall(script)
        if urls: found[p.relative_to(site).as_posix()] = urls
    for p in sorted(site.rglob('*.css')):
        if '_static/mathjax' in p.as_posix(): continue
        bad = _re_css_remote.findall(p.read_text(encoding='utf-8', errors='replace'))
        if bad: found[p.relative_to(site).as_posix()] = bad
    return found

_re_href = re.compile(r'<a\b[^>]*?\bhref="([^"#:]*\.html)(?:#([^"]*))?"')
_re_id = re.compile(r'\bid="([^"]+)"')

def local_links(site):
    "Links between the site's pages whose page, or heading on that page, does not exist"
    ids, pages, anchors = {}, [], []
    for p in sorted(site.rglob('*.html')):
        if '_static' in p.parts: continue
        text = p.read_text(encoding='utf-8')
        for href, anchor in _re_href.findall(text):
            target = (p.parent / href).resolve()
            if not target.exists():
                pages.append((p.relative_to(site).as_posix(), href))
                continue
            if anchor:
                if target not in ids: ids[target] = set(_re_id.findall(target.read_text(encoding='utf-8')))
                if anchor not in ids[target]: anchors.append((p.relative_to(site).as_posix(), f'{href}#{anchor}'))
    return pages, anchors

def check_site(results, nbs):
    problems = []
    if not (SITE / 'index.html').exists(): problems.append('the home page _site/index.html is missing')
    if not (SITE / 'search.html').exists() or not (SITE / 'searchindex.js').exists():
        problems.append('search page or index missing')
    opts = SITE / '_static' / 'documentation_options.js'
    if not opts.exists() or 'SHOW_SEARCH_SUMMARY: true' not in opts.read_text(encoding='utf-8'):
        problems.append('search results would show no excerpts (html_show_search_summary is off)')
    for r in results:
        rel = Path(r['src']).relative_to(nbs).as_posix()
        page = SITE / f"{r['page']}.html"
        if not page.exists():
            problems.append(f'nbs/{rel}: no page {page.relative_to(ROOT)}')
            continue
        missing = [n for n in r['api'] if n not in r['docs'] and not any(d.split('.')[0] == n for d in r['docs'])]
        if missing:
            problems.append(f'nbs/{rel}: exported but not documented (no show_doc output): {", ".join(missing)}')
        if not r['docs']: continue
        text = page_text(page)
        for name, sig in r['docs'].items():
            if squeeze(sig) not in text:
                problems.append(f'nbs/{rel}: the page {page.name} lacks the rendered signature of {name}')
    missing_pages, missing_anchors = local_links(SITE)
    problems += [f'_site/{f}: link to a missing page {u}' for f, u in missing_pages]
    remote = remote_urls(SITE)
    for f, urls in remote.items(): problems.append(f'_site/{f} loads from the network: {", ".join(sorted(set(urls)))}')
    if not (SITE / '_static' / 'mathjax' / 'MathJax.js').exists():
        problems.append('local MathJax missing from _site/_static/mathjax')
    return problems, missing_anchors


# ---------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--jobs', type=int, default=2, help='notebooks executed at once (default 2)')
    ap.add_argument('--no-readme', action='store_true', help='do not write README.md')
    args = ap.parse_args(argv)
    t0 = time.time()
    os.chdir(ROOT)
    os.environ.setdefault('MPLBACKEND', 'Agg')
    os.environ.setdefault('PYTHONHASHSEED', '0')      # workers start with it: the same outputs every build
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)
    nbs = Path(cfg.nbs_path).resolve()
    doc_url = cfg.doc_host.rstrip('/') + '/' + cfg.doc_baseurl.strip('/') + '/'
    skip_flags = cfg.tst_flags.split()
    notebooks = find_notebooks(nbs)
    index = nbs / cfg.get('readme_nb', 'index.ipynb')
    if index not in notebooks: raise BuildError(f'no home page: {index.relative_to(ROOT)} is missing')
    pages = {nb: page_of(nb, nbs) for nb in notebooks}
    dupes = {p for p in pages.values() if list(pages.values()).count(p) > 1}
    if dupes: raise BuildError(f'two notebooks would make the same page: {sorted(dupes)} (nbdev drops the number '
                               'prefix)')

    for d in (PROC, SITE): shutil.rmtree(d, ignore_errors=True)
    SRC.mkdir(parents=True)
    for f in nbs.rglob('*'):      # images and other files the notebooks' markdown may show
        rel = f.relative_to(nbs)
        if f.is_file() and f.suffix.lower() in {'.png', '.jpg', '.jpeg', '.gif', '.svg', '.webp'} \
                and not any(part[0] in '._' for part in rel.parts):
            (SRC / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, SRC / rel)

    jobs = [dict(src=str(nb), page=pages[nb], pages={str(k): v for k, v in pages.items()}, nbs=str(nbs),
                 doc_url=doc_url,
                 skip_flags=skip_flags, readme=nb == index) for nb in notebooks]
    print(f'executing and processing {len(jobs)} notebooks ({args.jobs} at a time)...', flush=True)
    results = run_all(jobs, args.jobs)
    readme = next((r['readme'] for r in results if r.get('readme') is not None), None)
    if readme is not None and not args.no_readme: (ROOT / 'README.md').write_text(readme, encoding='utf-8')
    failed = [r for r in results if not r['ok']]
    if failed: raise BuildError('notebook(s) failed:\n\n' + '\n\n'.join(r['error'] for r in failed))
    t_nbs = time.time() - t0
    for r in results:
        for w in r['warnings']: print(f"  note, {Path(r['src']).name}: {w}")
    chapters = [pages[nb] for nb in notebooks if nb != index and nb.parent == nbs]
    tutorials = [pages[nb] for nb in notebooks if nb.parent != nbs]
    add_toctrees(SRC / f'{pages[index]}.ipynb', chapters, tutorials)
    copy_mathjax()
    print('rendering the site with Sphinx...', flush=True)
    t1 = time.time()
    sphinx_warnings = run_sphinx(args.jobs)
    t_sphinx = time.time() - t1
    for w in sphinx_warnings: print(f'  sphinx: {w}')

    problems, missing_anchors = check_site(results, nbs)
    for f, link in missing_anchors: print(f'  note: _site/{f} links to {link}, a heading that does not exist')
    if problems: raise BuildError('the built site is not right:\n  - ' + '\n  - '.join(problems))
    print(f"\n{len(results)} pages in _site/ (open _site/index.html):")
    for r in sorted(results, key=lambda r: r['page'] != 'index'):
        print(f"  {r['page'] + '.html':28} {r['title'][:40]:40} {len(r['docs']):3} API entries  {r['secs']:5.1f} s")
    if not args.no_readme: print('README.md written from nbs/index.ipynb')
    print(f'done in {time.time() - t0:.1f} s (notebooks {t_nbs:.1f} s, Sphinx {t_sphinx:.1f} s); no page loads '
          'anything from another host '
          f'({sum(1 for _ in SITE.rglob("*.html"))} pages and their stylesheets scanned)')


if __name__ == '__main__':
    if sys.argv[1:2] == ['--worker']:
        worker_main(sys.argv[2])
        sys.exit(0)
    try: main()
    except BuildError as e:
        sys.stderr.write(f'\ndocs build FAILED: {e}\n')
        sys.exit(1)
