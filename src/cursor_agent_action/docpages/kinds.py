"""What counts as documentation, and which files are usually executed: one list, with a reason
per entry, for the ``docs`` preset (what it may write, what it never may), publish's warning
(a change it lets through that holds files a build or test run executes) and
docs/permissions.md (generated from here).

A docs toolchain reads prose but *runs* its configuration: Sphinx executes ``conf.py`` and the
extensions under ``_ext/``, pytest imports any ``conftest.py`` it finds below the directory it
starts in, MkDocs hooks and plugins are Python named in ``mkdocs.yml``, npm runs the scripts of
``package.json``, Read the Docs runs the commands of ``.readthedocs.yaml`` and installs what
``requirements.txt`` names. A change that claims to be documentation must hold none of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from cursor_agent_action.globs import covers, names

DOC_TYPES: tuple[tuple[str, str], ...] = (
    ("md,markdown", "Markdown"),
    ("rst", "reStructuredText"),
    ("adoc,asciidoc", "AsciiDoc"),
    ("txt", "plain text"),
)
"""Documentation by extension: ``(extensions, what)``."""
IMAGE_TYPES = "png,jpg,jpeg,gif,svg,webp,avif,ico"
"""Images a page shows, by extension."""

EXECUTED: tuple[tuple[str, str], ...] = (
    ("**/*.{py,pyw,pth}", "Python: `conftest.py` (pytest loads it), Sphinx's `conf.py` and "
                          "extensions, MkDocs hooks, setup scripts; a `.pth` runs at start-up"),
    ("**/_ext/**", "Sphinx extensions, whatever their file names"),
    ("**/*.{js,cjs,mjs,jsx,ts,cts,mts,tsx}", "JavaScript and TypeScript: docs site configs "
                                             "(`docusaurus.config.js`, VitePress), plugins"),
    ("**/{Makefile,GNUmakefile,makefile,*.mk,make.bat}", "make (Sphinx's `make html`)"),
    ("**/{mkdocs,zensical}.{yml,yaml}", "MkDocs configuration: the hooks and plugins it names "
                                        "run"),
    ("**/.readthedocs.{yml,yaml}", "Read the Docs: the build commands it runs"),
    ("**/{package.json,package-lock.json,.npmrc,.yarnrc*,pnpm-*.yaml}",
     "npm, yarn and pnpm: scripts run on install and build, and where packages come from"),
    ("**/*{requirements,constraints}*.{txt,in}", "pip installs what they name (a docs build's "
                                                 "packages; `test-requirements.txt` too)"),
    ("**/{requirements,constraints}/**/*.{txt,in}", "pip requirement files kept in a "
                                                   "directory"),
    ("**/test*.txt", "pytest collects `test*.txt` as doctests by default: `>>>` lines run"),
    ("**/{pyproject.toml,setup.cfg,tox.ini,noxfile.py,Pipfile}", "Python builds and test runs: "
                                                                 "build hooks, commands"),
    ("**/{Gemfile,Rakefile,*.rb,_config.yml}", "Ruby: Jekyll plugins and configuration, rake, "
                                               "bundler"),
    ("**/CMakeLists.txt", "CMake runs it"),
    ("**/{Dockerfile,*.dockerfile,Containerfile}", "container builds"),
    ("**/*.{sh,bash,zsh,fish,ps1,psm1,bat,cmd}", "shell scripts"),
    ("**/*.mdx", "MDX: a page compiled to JavaScript (its `import`, `export` and `{...}` "
                 "run in the docs build)"),
    ("**/{build.rs,Cargo.toml,Cargo.lock,rust-toolchain,rust-toolchain.toml,.cargo/**}",
     "Rust: cargo runs `build.rs` and the build scripts and proc macros `Cargo.toml` names"),
    ("**/{*.gradle,*.gradle.kts,gradlew,gradle.properties,gradle/**,pom.xml,mvnw,.mvn/**}",
     "JVM: Gradle scripts are code; Maven runs the plugins `pom.xml` names; the wrappers "
     "download and run what their properties name"),
    ("**/{*.csproj,*.fsproj,*.vbproj,*.props,*.targets,*.sln,nuget.config,global.json}",
     ".NET: MSBuild runs the tasks and targets of project files and `Directory.Build.props`"),
    ("**/{.pre-commit-config.yaml,.pre-commit-hooks.yaml}",
     "pre-commit runs the hooks it names"),
    ("**/{pytest.ini,.coveragerc,conftest.ini,setup.py}",
     "pytest and coverage configuration: plugins, `addopts`, doctest globs"),
    ("**/{.envrc,.env.example,.tool-versions,.mise.toml,mise.toml}",
     "direnv and version managers: `.envrc` is a shell script run on entering the directory"),
    ("**/{Justfile,justfile,.justfile,Taskfile.yml,Taskfile.yaml,Earthfile,Vagrantfile}",
     "task runners: just, Task, Earthly, Vagrant (Ruby)"),
    ("**/{BUILD,BUILD.bazel,WORKSPACE,WORKSPACE.bazel,MODULE.bazel,*.bzl,.bazelrc,BUCK}",
     "Bazel and Buck: Starlark rules and the commands they run"),
    ("**/{meson.build,meson_options.txt,meson.options,configure,configure.ac,*.m4,"
     "Makefile.am,Makefile.in}", "meson and autotools: build definitions and generated shell"),
    ("**/{overrides,_templates,_layouts,_includes}/**",
     "docs theme overrides and templates (MkDocs `overrides/`, Sphinx `_templates/`, Jekyll "
     "`_layouts/` and `_includes/`): Jinja and Liquid run in the build"),
    ("**/*.{ipynb,j2,jinja,jinja2,html,htm}", "notebooks (myst-nb and nbsphinx execute their "
                                              "cells) and templates"),
    ("**/{go.mod,go.sum,*.go}", "Go: `go generate` and build constraints; `go.mod` names what "
                                "is fetched"),
    ("**/{composer.json,*.php,Podfile,*.podspec,Package.swift,*.cabal,stack.yaml,mix.exs,"
     "rebar.config,build.sbt,*.sbt,deno.json,deno.jsonc,bunfig.toml,.yarn/**}",
     "other ecosystems' build files and scripts"),
    ("**/{.bashrc,.profile,.bash_profile,.zshrc,.npmrc,.pypirc,.netrc,pip.conf,pip.ini,"
     ".condarc,environment.yml,environment.yaml,.python-version,.nvmrc,.node-version}",
     "shell start-up files, package-manager configuration and environment definitions"),
)
"""Files usually executed by a build, a test run or a docs toolchain: ``(pattern, why)``."""


def doc_globs(*, images: bool = True) -> tuple[str, ...]:
    """The ``**/*.{...}`` globs of documentation files (and images)."""
    extensions = ",".join(ext for exts, _ in DOC_TYPES for ext in exts.split(","))
    return (f"**/*.{{{extensions}}}", *((f"**/*.{{{IMAGE_TYPES}}}",) if images else ()))


def executed_globs() -> tuple[str, ...]:
    return tuple(pattern for pattern, _ in EXECUTED)


def is_documentation(path: str) -> bool:
    """Whether ``path`` is a documentation file by its extension (images are not)."""
    return names(doc_globs(images=False), path)


def usually_executed(paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that a build, a test run or a docs toolchain usually executes
    (or that sit below a directory of such a name)."""
    globs = executed_globs()
    return [path for path in paths if covers(globs, path)]
