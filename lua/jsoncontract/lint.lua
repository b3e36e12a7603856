--- Alias kept for callers of the old name: lint lives in `jsoncontract.contract.lint`.
-- @module jsoncontract.lint
return require "jsoncontract.contract.lint"
