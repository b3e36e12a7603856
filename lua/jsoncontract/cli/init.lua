--- The command line behind bin/jsoncontract: one table of commands, from which dispatch,
-- usage and parsing (Debian's lua-argparse) all come.
--
-- A command is a module `jsoncontract.cli.<name>` listed in `COMMANDS`, returning
--
--    {
--      name = "check",                          -- the word on the command line
--      summary = "one line for the usage list",
--      configure = function(parser) ... end,    -- add options/arguments to its argparse parser
--      run = function(args, env) ... end,       -- -> exit status (integer)
--    }
--
-- `args` is what argparse parsed (option `--base-url` is `args.base_url`); `env` holds
-- `root` (the repository or the installed data folder: examples/ lives there), `bindir` (the
-- folder of bin/jsoncontract), `stdout` and `stderr` (file-like, `:write`). A command writes
-- only through `env`, reports a usage error with `jsoncontract.cli.util.fail(env, msg)`
-- (exit status 2), and never calls `os.exit`. Every command gets `-h`/`--help`; the program
-- gets `--version`; options take `--opt value` and `--opt=value`.
-- To add a command: write the module, add its name to `COMMANDS`, map it in the rockspec.
-- @module jsoncontract.cli
local core = require "jsoncontract.core"
local argparse = require "argparse"

local type, ipairs, require, tostring, xpcall, pcall = type, ipairs, require, tostring, xpcall, pcall

local _M = { _VERSION = core._VERSION }

--- The command modules, in the order the usage lists them (`jsoncontract.cli.<name>`).
_M.COMMANDS = { "run", "triage", "check", "diff", "replay", "selftest", "probe", "examples", "lint",
    "enqueue", "worker", "status", "export", "review" }

local EPILOG = [[
With OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY set, run, triage and probe call that provider; otherwise
they start the embedded stand-in model on 127.0.0.1 and talk to it over real HTTP. Keys never
reach any output. `jsoncontract <command> --help` describes one command.]]

-- A -h/--help flag that records which parser asked, instead of argparse's print-and-exit:
-- a command never ends the process (specs call `main` in-process).
local function add_help(parser, state)
    parser:add_help(false)
    parser:flag("-h --help", "Show this help and exit."):action(function() state.help = parser end)
end

--- The parser of the whole program and the command modules by name.
-- @treturn table argparse parser
-- @treturn table commands by name
-- @treturn table state `{help = parser|nil, version = boolean|nil}` filled while parsing
-- @treturn table the commands' parsers by name
function _M.parser()
    local state = {}
    local parser = argparse("jsoncontract",
        "Make a language model's structured output safe to hand to code.", EPILOG)
    parser:command_target("command")
    add_help(parser, state)
    parser:flag("--version", "Print the version and exit."):action(function() state.version = true end)
    local commands, parsers = {}, {}
    for _, name in ipairs(_M.COMMANDS) do
        local cmd = require("jsoncontract.cli." .. name)
        if type(cmd) ~= "table" or type(cmd.run) ~= "function" or cmd.name ~= name then
            error("jsoncontract.cli." .. name .. " is not a command module {name=, summary=, configure=, run=}")
        end
        local sub = parser:command(cmd.name, cmd.summary)
        add_help(sub, state)
        if cmd.configure then cmd.configure(sub) end
        commands[name], parsers[name] = cmd, sub
    end
    return parser, commands, state, parsers
end

-- argparse reads every word that starts with "-" as an option, so in `--limit -1` the value
-- would be "unknown option '-1'". No option of ours is spelled like a number: a word that looks
-- like a negative number right after a long option without "=" is that option's value, joined as
-- `--limit=-1`, so the option's own check answers the same for both spellings.
local function join_negative_values(list)
    for i = #list, 2, -1 do
        local prev = list[i - 1]
        if list[i]:match("^%-%.?%d") and prev:match("^%-%-[^=]+$") then
            local before_end = true -- not after a "--" that ends the options
            for j = 1, i - 2 do if list[j] == "--" then before_end = false end end
            if before_end then
                list[i - 1] = prev .. "=" .. list[i]
                table.remove(list, i)
            end
        end
    end
    return list
end

--- Run the program.
-- @tparam table argv the arguments (the script's `arg`: argv[1] is the command)
-- @tparam[opt] table env `root`, `bindir`, `stdout`, `stderr` (see the module description)
-- @treturn integer exit status: the command's, 2 on a usage error, 0 after --help/--version, 70
--   (`INTERNAL_ERROR`) after an error the command did not catch
function _M.main(argv, env)
    env = env or {}
    env.root = env.root or "."
    env.bindir = env.bindir or (env.root .. "/bin")
    env.stdout = env.stdout or io.stdout
    env.stderr = env.stderr or io.stderr
    local list = {}
    for i = 1, #argv do list[i] = argv[i] end
    -- `jsoncontract help [COMMAND]` is `--help` of the program or of the command.
    if list[1] == "help" then
        table.remove(list, 1)
        list[#list + 1] = "--help"
    end
    local parser, commands, state, parsers = _M.parser()
    local ok, args = parser:pparse(join_negative_values(list))
    if state.help then
        env.stdout:write(state.help:get_help(), "\n")
        return 0
    end
    if state.version then
        env.stdout:write("jsoncontract ", core._VERSION, "\n")
        return 0
    end
    if not ok then
        env.stderr:write((parsers[list[1]] or parser):get_usage(), "\n")
        env.stderr:write("jsoncontract: ", tostring(args), "\n")
        return 2
    end
    -- (a closure: PUC Lua 5.1's xpcall passes no arguments)
    local run = commands[args.command].run
    local done, status = xpcall(function() return run(args, env) end, debug.traceback)
    if done then return status end
    return _M.internal_error(status, env)
end

--- Exit status after an error no command caught (a bug, or a fault of the environment that no
-- check foresaw, such as a read-only job folder): EX_SOFTWARE of sysexits.h.
_M.INTERNAL_ERROR = 70

--- The way out after an error no command caught: stop the stand-in servers the command started
-- (`jsoncontract.standin.process.stop_all`; else closing the Lua state would wait on them),
-- release the signal catch, and say what happened on stderr with the traceback, credentials
-- masked.
-- @param err the error with its traceback (from `xpcall`)
-- @tparam table env as for `main`
-- @treturn integer `INTERNAL_ERROR`
function _M.internal_error(err, env)
    pcall(require("jsoncontract.standin.process").stop_all)
    if core.signal_catch then pcall(core.signal_catch, false) end
    local text = require("jsoncontract.secrets").redact_credentials(tostring(err))
    env.stderr:write("jsoncontract: internal error (exit status ", _M.INTERNAL_ERROR, "; what was committed "
        .. "stays): ", text, "\n")
    return _M.INTERNAL_ERROR
end

return _M
