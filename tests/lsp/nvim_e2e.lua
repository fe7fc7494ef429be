-- Headless Neovim 0.11 drives `exportlens serve` through one example end to end:
-- open -> diagnostics -> code action (resolved lazily) -> apply edit -> :write -> diagnostics gone.
-- Inputs come from the environment; the outcome is one JSON line on stdout.
local file = os.getenv("EXPORTLENS_FILE")
local root = os.getenv("EXPORTLENS_ROOT")
local python = os.getenv("EXPORTLENS_PYTHON")
local out = { steps = {} }

local function finish(ok, why)
  out.ok = ok
  out.why = why
  io.stdout:write(vim.json.encode(out) .. "\n")
  vim.cmd("qall!")
end

vim.cmd("filetype on")
vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start({
  name = "exportlens",
  cmd = { python, "-P", "-m", "exportlens", "serve" },
  root_dir = root,
  init_options = { trusted = true, settings = { run = "onSave", verifyFixes = "off" } },
}, { bufnr = buf })
if not client_id then return finish(false, "vim.lsp.start failed") end

local function lens_diags()
  -- a run's result, not the early publish of the user's failed export (data.partial) while draft export runs
  return vim.tbl_filter(function(d)
    local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data
    return d.source == "exportlens" and not (data and data.partial)
  end, vim.diagnostic.get(buf))
end

if not vim.wait(90000, function() return #lens_diags() > 0 end, 100) then
  return finish(false, "no diagnostics")
end
local d = lens_diags()[1]
out.diagnostic = { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col, code = d.code }
table.insert(out.steps, "diagnostics")

local client = vim.lsp.get_client_by_id(client_id)
local lsp_diag = d.user_data and d.user_data.lsp
local params = {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = lsp_diag.range,
  context = { diagnostics = { lsp_diag }, only = { "quickfix" } },
}
local resp = client:request_sync("textDocument/codeAction", params, 10000, buf)
if not resp or resp.err or not resp.result or #resp.result == 0 then
  return finish(false, "no code actions: " .. vim.inspect(resp))
end
local action
for _, a in ipairs(resp.result) do
  if a.isPreferred then action = a end
end
action = action or resp.result[1]
out.action = action.title
table.insert(out.steps, "code action")
if not action.edit then
  local resolved = client:request_sync("codeAction/resolve", action, 10000, buf)
  if not resolved or resolved.err then return finish(false, "resolve failed: " .. vim.inspect(resolved)) end
  action = resolved.result
  table.insert(out.steps, "resolved")
end
vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
table.insert(out.steps, "applied")
vim.cmd("write")
-- the problem gone: what is left is hints (could-be-dynamic, once the model exports), never a problem
local function problems()
  return vim.tbl_filter(function(x) return x.severity <= vim.diagnostic.severity.WARN end, lens_diags())
end
if not vim.wait(90000, function() return #problems() == 0 and #lens_diags() > 0 end, 100) then
  return finish(false, "diagnostic still there after save")
end
table.insert(out.steps, "cleared")
out.left = vim.tbl_map(function(x) return x.code end, lens_diags())
out.text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
finish(true, "")
