function __sesamectl_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __sesamectl_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __sesamectl_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __sesamectl_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __sesamectl_parse_tokens -S
    set -l unparsed_tokens (__sesamectl_tokens -pc)
    switch $unparsed_tokens[1]
    case 'sesamectl'
        __sesamectl_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'status'
            __sesamectl_parse_subcommand 1 'socket=' 'json' 'check' 'version' 'h/help'
        case 'accounts'
            __sesamectl_parse_subcommand 0 'socket=' 'json' 'no-legend' 'version' 'h/help'
        case 'providers'
            __sesamectl_parse_subcommand 1 'socket=' 'json' 'no-legend' 'check' 'version' 'h/help'
        case 'login'
            __sesamectl_parse_subcommand 1 'socket=' 'device' 'browser' 'name=' 'scope=+' 'no-browser' 'json' 'version' 'h/help'
        case 'token'
            __sesamectl_parse_subcommand 1 'socket=' 'json' 'format=' 'id-token' 'scope=+' 'audience=' 'resource=' 'min-valid=' 'rejected' 'version' 'h/help'
        case 'exec'
            __sesamectl_parse_subcommand -r 1 'socket=' 'account=' 'env=' 'login' 'version' 'h/help'
        case 'refresh'
            __sesamectl_parse_subcommand 1 'socket=' 'json' 'version' 'h/help'
        case 'import'
            __sesamectl_parse_subcommand 1 'socket=' 'subject=' 'display-name=' 'name=' 'code=' 'redirect-uri=' 'json' 'version' 'h/help'
        case 'logout'
            __sesamectl_parse_subcommand 1 'socket=' 'json' 'version' 'h/help'
        case 'remove'
            __sesamectl_parse_subcommand 1 'socket=' 'force' 'no-revoke' 'version' 'h/help'
        case 'rename'
            __sesamectl_parse_subcommand 2 'socket=' 'clear' 'json' 'version' 'h/help'
        case 'watch'
            __sesamectl_parse_subcommand 0 'socket=' 'json' 'account=+' 'kind=+' 'since=' 'follow' 'no-follow' 'version' 'h/help'
        case 'share'
            __sesamectl_parse_subcommand -r 1 'socket=' 'for=' 'mode=' 'group=' 'id-token' 'daemon-socket=' 'version' 'h/help'
        case 'rekey'
            __sesamectl_parse_subcommand 0 'socket=' 'version' 'h/help'
        case 'help'
            __sesamectl_parse_subcommand -r 1 'version'
        end
    end
end

function __sesamectl_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __sesamectl_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __sesamectl_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __sesamectl_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__sesamectl_tokens -p)
    if test -z "$(__sesamectl_tokens -t)"
        set -l index (count (__sesamectl_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'sesamectl' -f
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'status' -d 'Show whether sesamed is running and the accounts you may see, or one account\'s state.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'accounts' -d 'List the accounts you may see.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'providers' -d 'List the configured providers and their login flows, or check their files.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'login' -d 'Log an account in with a configured provider.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'token' -d 'Print a current access token of an account (refreshed by sesamed when needed).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'exec' -d 'Run a command with a fresh access token in its environment, only if the session is usable.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'refresh' -d 'Refresh an account\'s tokens now.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'import' -d 'Hand sesamed the tokens, or the authorization code, of a login done elsewhere.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'logout' -d 'End an account\'s session and wipe its tokens.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'remove' -d 'Delete an account record.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'rename' -d 'Give an account a name to use in place of its id.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'watch' -d 'Print session events as they happen, one line each.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'share' -d 'Offer accounts\' access tokens on a socket of your own, for a container or a remote host.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'rekey' -d 'Seal the token store under a new key (root only).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl status" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl status" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl status" json' -l 'json' -d 'Print the status as JSON.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl status" check' -l 'check' -d 'With ACCOUNT: ask the provider whether it still accepts the access token.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl status" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl accounts" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl accounts" json' -l 'json' -d 'Print the accounts as a JSON array.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl accounts" no-legend' -l 'no-legend' -d 'Leave out the table\'s header (shown on a terminal).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl accounts" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl accounts" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" json' -l 'json' -d 'Print the providers as a JSON array.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" no-legend' -l 'no-legend' -d 'Leave out the table\'s header (shown on a terminal).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" check' -l 'check' -d 'Check each provider\'s file against the provider (or NAME\'s alone).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl providers" -eq 1' -fka '(sesamectl providers --names 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl providers" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl login" -eq 1' -fka '(sesamectl providers --names 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" device' -l 'device' -d 'Use the device flow: enter a code shown here on any device.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" browser' -l 'browser' -d 'Use the authorization-code flow with a browser on this machine.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" name' -l 'name' -d 'A name for the account, to use in place of its id (see `sesamectl rename`).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login"' -l 'scope' -d 'Scope to ask for instead of the provider\'s configured ones (repeatable).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" no-browser' -l 'no-browser' -d 'Only print the browser login\'s URL; do not open a browser.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" json' -l 'json' -d 'Print the account as JSON on stdout (what to do goes to stderr then).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl login" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl token" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" json' -l 'json' -d 'Print {accessToken, tokenType, expiresAt} as JSON (as --format json).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" format' -l 'format' -d 'plain (the token alone), json, or exec-credential (kubectl\'s).' -rfka 'plain json exec-credential'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" id-token' -l 'id-token' -d 'The account\'s ID token instead of its access token.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token"' -l 'scope' -d 'A token with only this scope (repeat for more; a subset of those granted).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" audience' -l 'audience' -d 'A token for this service (RFC 8693 audience).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" resource' -l 'resource' -d 'A token for this resource (an absolute URI, RFC 8707).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" min-valid' -l 'min-valid' -d 'Refresh first when the token would expire within SECONDS (as far as the provider\'s token lifetime allows).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" rejected' -l 'rejected' -d 'The token was refused by the API it was sent to (HTTP 401): sesamed refreshes once, for every program that uses the account, and the new token is printed. The refused token is $SESAME_ACCESS_TOKEN when set (as `sesamectl exec` sets it), else the current one.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl token" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" account' -l 'account' -d 'The account whose token the command gets.' -rfka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" env' -l 'env' -d 'The environment variable that carries the token.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" login' -l 'login' -d 'Log the account in first when it needs a login.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl exec" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl refresh" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl refresh" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl refresh" json' -l 'json' -d 'Print the result as JSON.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl refresh" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl refresh" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl import" -eq 1' -fka '(sesamectl providers --names 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" subject' -l 'subject' -d 'The provider\'s subject identifier for the person (token import).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" display-name' -l 'display-name' -d 'A name to show people.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" name' -l 'name' -d 'A name for the account, to use in place of its id (see `sesamectl rename`).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" code' -l 'code' -d 'Redeem an authorization code read from FILE, or - for standard input.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" redirect-uri' -l 'redirect-uri' -d 'The redirect URI the code was issued for (with --code).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" json' -l 'json' -d 'Print the account as JSON.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl logout" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl logout" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl logout" json' -l 'json' -d 'Print the result as JSON.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl logout" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl logout" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl remove" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl remove" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl remove" force' -l 'force' -d 'Remove an account that is not logged out (logging it out first).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl remove" no-revoke' -l 'no-revoke' -d 'With --force: do not log out (revoke) first; the grant stays at the provider.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl remove" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl remove" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rename" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl rename" -eq 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rename" clear' -l 'clear' -d 'Take the account\'s name away.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rename" json' -l 'json' -d 'Print the account as JSON.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rename" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rename" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" json' -l 'json' -d 'Print each reply as one JSON object per line.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch"' -l 'account' -d 'Only events of this account (repeatable).' -rfka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch"' -l 'kind' -d 'Only events of this kind (repeatable): loggedIn, expiring, expired, ...' -rfka 'loggedIn tokenRefreshed expiring expired refreshTokenExpiring refreshFailed needsLogin loggedOut accountRemoved'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" since' -l 'since' -d 'Replay the events after this sequence number first.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" follow' -l 'follow' -d '--follow reconnects and resumes when sesamed restarts; --no-follow ends when the connection does (default: --follow on a terminal). Either way, watch runs until interrupted.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" no-follow' -l 'no-follow' -d '--follow reconnects and resumes when sesamed restarts; --no-follow ends when the connection does (default: --follow on a terminal). Either way, watch runs until interrupted.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_positional "sesamectl share" -ge 1' -fka '(sesamectl accounts --ids 2>/dev/null)'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" socket' -l 'socket' -d 'Where to serve the share (a path for a new Unix socket).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" for' -l 'for' -d 'End the share after this long: 90s, 30m, 8h or 2d.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" mode' -l 'mode' -d 'The socket\'s permission bits: 0600 (the default) for you alone, or 0660 for a group too.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" group' -l 'group' -d 'The group the socket belongs to, for --mode 0660.' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" id-token' -l 'id-token' -d 'Also pass on the accounts\' ID tokens (GetIDToken).'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" daemon-socket' -l 'daemon-socket' -d 'sesamed\'s socket (default: as for every other command).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl share" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rekey" socket' -l 'socket' -d 'The daemon\'s socket (default: $SESAME_SOCKET, the user daemon\'s, or /run/sesame/io.sesame).' -rfka ''
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rekey" version' -l 'version' -d 'Show the version.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl rekey" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'sesamectl' -n '__sesamectl_should_offer_completions_for_flags_or_options "sesamectl help" version' -l 'version' -d 'Show the version.'
