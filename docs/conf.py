"""Sphinx configuration of the clinseg docs site. Do not run Sphinx by hand: `python docs/build.py` does.

The sources are the notebooks that build.py has executed and processed with nbdev into `_proc/src/`;
myst-nb renders them as they are (no execution here), sphinx-book-theme lays out the book.
Everything the pages load is local: MathJax 2 comes from the `jupyter-server-mathjax` package.
"""
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROC = ROOT / '_proc'
_ini = configparser.ConfigParser()
_ini.read(ROOT / 'settings.ini')
_cfg = _ini['DEFAULT']

project = _cfg['title']
author = _cfg['author']
copyright = _cfg['copyright']
release = version = _cfg['version']

extensions = ['myst_nb', 'sphinx.ext.mathjax']
root_doc = 'index'
exclude_patterns = ['**.ipynb_checkpoints', '_build']
source_suffix = {'.ipynb': 'myst-nb'}   # the site is made of notebooks only

# --- myst-nb: the notebooks already hold their outputs
nb_execution_mode = 'off'
nb_render_markdown_format = 'myst'      # markdown outputs (show_doc, tables) render as MyST: tables, math
nb_merge_streams = True
myst_enable_extensions = ['dollarmath', 'amsmath', 'attrs_block', 'attrs_inline', 'colon_fence', 'deflist']
myst_all_links_external = True          # build.py has already turned notebook links into page links
suppress_warnings = ['myst.header']     # a chapter may go from a level-2 heading to a level-4 one

# --- theme
html_theme = 'sphinx_book_theme'
html_title = project
html_static_path = ['_static', str(PROC / 'static')]   # the second holds the copied MathJax
html_css_files = ['clinseg.css']
html_js_files = []
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    'home_page_in_toc': True,
    'show_navbar_depth': 1,
    'show_toc_level': 2,
    'use_download_button': False,
    'use_repository_button': False,     # the project has no public host to link to
    'navigation_with_keys': False,
    'navbar_persistent': [],    # pydata-sphinx-theme 0.20 would add a second search bar above the book's layout
}
pygments_style = 'sphinx'

# --- math: local MathJax 2 (no CDN). HTML-CSS output with the STIX web fonts shipped in the package.
mathjax_path = 'mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full'
mathjax2_config = {
    'tex2jax': {'inlineMath': [['\\(', '\\)']], 'displayMath': [['\\[', '\\]']],
                'processEscapes': True, 'processClass': 'math|output_area',
                'ignoreClass': 'tex2jax_ignore|mathjax_ignore'},
    # MathJax's blank spacing font is `url('about:blank')`, which browsers refuse to load (three console errors a page):
    # a local() font is looked up on the machine only, and never fetched
    'HTML-CSS': {'availableFonts': [], 'webFont': 'STIX-Web', 'imageFont': None,
                 'styles': {'@font-face': {'font-family': 'MathJax_Blank', 'src': "local('MathJax_Blank')"}}},
    'MathMenu': {'showLocale': False},
    'messageStyle': 'none',
}
# widgets need a kernel: on the site each is a note and its static figure (build.py)
nb_ipywidgets_js = {}
