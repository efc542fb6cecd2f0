# Shared by scripts/install_browser.sh and scripts/install_postgres.sh (sourced, not run):
# apt packages as root or with sudo, and a Python package into the venv, each skipped when
# already there.

# apt_install WHAT PACKAGE... : install Debian packages (root or sudo), or fail saying how.
apt_install() {
    local what="$1"
    shift
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            echo "Installing $what needs root (or sudo): run 'apt-get install $*' as root." >&2
            return 1
        fi
    fi
    echo "Installing $* with apt-get..."
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "$@"
}

# as_root COMMAND... : run a command as root (directly, or with sudo when there is one).
as_root() {
    if [ "$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null 2>&1; then
        "$@"
    else
        sudo "$@"
    fi
}

# pip_install VENV MODULE REQUIREMENT : pip-install REQUIREMENT unless MODULE imports.
pip_install() {
    local venv="$1" module="$2" requirement="$3"
    if [ ! -x "$venv/bin/python" ]; then
        echo "No Python venv at $venv (pass its path as the first argument)." >&2
        return 1
    fi
    if "$venv/bin/python" -c "import $module" >/dev/null 2>&1; then
        echo "$module already installed in $venv"
    else
        echo "Installing $requirement into $venv..."
        "$venv/bin/python" -m pip install -q "$requirement"
    fi
}
