# bash completion for gpumem. Commands, options and their choices come from `gpumem --help`
# and `gpumem CMD --help` at completion time, so they always match the gpumem being run.

# The commands `gpumem --help` lists.
_gpumem_commands()
{
    "$1" --help 2>/dev/null | awk '/^commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { exit }'
}

# The option lines of `gpumem CMD --help`: the part before the description, one a line.
_gpumem_option_lines()
{
    "$1" "$2" --help 2>/dev/null | sed -n -E 's/^ +(-[^ ].*)$/\1/p' | sed -E 's/   .*//; s/  [a-z(].*//'
}

_gpumem()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local gpumem=${COMP_WORDS[0]} i
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_gpumem_commands "$gpumem") help --help --version" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]}
    if [ "$cmd" = help ]; then
        [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "$(_gpumem_commands "$gpumem")" -- "$cur"))
        return
    fi
    # After `--` (gpumem check -- PROGRAM ...): a program, then its own arguments.
    for ((i = 2; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = "--" ]; then
            if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
                COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    done
    # --opt=VALUE splits into --opt, = and VALUE (COMP_WORDBREAKS has =).
    local opt=$prev
    if [ "$prev" = "=" ]; then
        opt=${COMP_WORDS[COMP_CWORD-2]}
    elif [ "$cur" = "=" ]; then
        opt=$prev cur=""
    fi
    if [[ $opt == --* && ( $prev == "=" || $cur == "" || $cur != -* ) ]]; then
        local line
        line=$(_gpumem_option_lines "$gpumem" "$cmd" | grep -E -- "(^|, )$opt[= ]" | head -1)
        if [[ $line == *"$opt="*"|"* ]]; then   # --leak-check=no|summary|full
            local choices=${line#*"$opt="}
            choices=${choices%% *}
            COMPREPLY=($(compgen -W "${choices//|/ }" -- "$cur"))
            return
        fi
        if [[ $line == *"$opt="* || $line == *"$opt "[A-Z]* ]]; then  # --json=PATH, --json PATH
            COMPREPLY=($(compgen -f -- "$cur"))
            return
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_gpumem_option_lines "$gpumem" "$cmd" | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,')" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _gpumem gpumem
