"Packaging for clinseg: every setting comes from settings.ini (nbdev's single source)."
from configparser import ConfigParser
from pathlib import Path
import shlex
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).parent/'settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

def split_reqs(key): return shlex.split(cfg.get(key, ''))  # keeps "a>=1,<2" as one item

licenses = {'apache2': 'Apache-2.0'}  # SPDX expression
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable']
readme = Path(__file__).parent/'README.md'

setuptools.setup(
    name=cfg['lib_name'], version=cfg['version'], description=cfg['description'],
    long_description=readme.read_text(encoding='utf-8') if readme.exists() else '',
    long_description_content_type='text/markdown',
    author=cfg['author'], author_email=cfg['author_email'], license=licenses[cfg['license']],
    keywords=cfg['keywords'].split(), url=cfg['git_url'],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'],
                 'Natural Language :: ' + cfg['language'], 'Programming Language :: Python :: 3.11'],
    packages=setuptools.find_packages(include=['clinseg', 'clinseg.*']),
    include_package_data=True, zip_safe=False,
    python_requires='>=' + cfg['min_python'],
    install_requires=split_reqs('requirements'),
    extras_require={'demo': split_reqs('demo_requirements'), 'lab': split_reqs('lab_requirements'),
                    'serve': split_reqs('serve_requirements'),
                    'dev': (split_reqs('lab_requirements') + split_reqs('serve_requirements')
                            + split_reqs('dev_requirements'))},
    entry_points={'console_scripts': split_reqs('console_scripts'),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
