--- Alias kept for callers of the old name: the lint command lives in `jsoncontract.cli.lint`.
-- @module jsoncontract.cli_lint
return require "jsoncontract.cli.lint"
