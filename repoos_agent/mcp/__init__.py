"""The MCP server: the engine's operations for coding assistants (Claude Code, Codex) over the official `mcp` SDK.

Modules are imported absolutely (`repoos_agent.mcp.server`), so the SDK's own `mcp`
package is never shadowed by this one.
"""
