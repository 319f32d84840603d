"""Held-out search benchmark, half A: a catalog of work and operations tools, and labelled queries.

:func:`heldout_catalog_a` returns about 140 operations across nine products, each modelled on
that product's public API (or its public MCP server): Jira, Linear, Notion, Confluence and
Zendesk, and under the ``devops`` namespace PagerDuty, Sentry, Datadog and Cloudflare. The
descriptions and parameter names follow the way those APIs document themselves: terse,
sometimes jargon-heavy, with the confusable neighbours real APIs have (list vs search vs get,
archive vs delete, several kinds of "list" in one app).

:data:`QUERIES_A` holds labelled searches written from the side of a user and of a model that
has just read the user's request: the words a model would type, two more phrasings it would try
at the same time (one of them a guess at the API verb, made without seeing this catalog), and
every operation path that would meet the need.

This file was written blind, before any search engine ran on it, by someone who had not read
how the engine ranks. It is a held-out set: measure on it, never tune against it. If a change to
search is judged by these queries, the queries and the catalog must stay as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from catalogs import LabelledQuery, _app, p, read, write

from mycelium import Module

__all__ = ["QUERIES_A", "heldout_catalog_a"]


# --------------------------------------------------------------------------------------
# Work tracking and documents
# --------------------------------------------------------------------------------------

_START_AT = p("startAt", int, "The index of the first item to return in a page of results (page offset).", 0)
_MAX_RESULTS = p("maxResults", int, "The maximum number of items to return per page.", 50)


def _jira() -> Module:
    issue = p("issueIdOrKey", str, "The ID or key of the issue, for example PROJ-123.")
    board = p("boardId", int, "The ID of the board.")
    sprint = p("sprintId", int, "The ID of the sprint.")
    issues = p("issues", list[str], "The IDs or keys of the issues. At most 50 issues per request.")
    return _app(
        "jira",
        "Jira Cloud: issues, workflows, agile boards and sprints.",
        {
            "issues.create": write(
                "Creates an issue or, where the option to create subtasks is enabled, a subtask.",
                p("projectKey", str, "The key of the project the issue is created in."),
                p("issuetype", str, "The issue type name, for example Bug, Story, Task or Sub-task."),
                p("summary", str, "A brief one-line summary of the issue."),
                p("description", str | None, "The description, in Atlassian Document Format or plain text.", None),
                p("parent", str | None, "The key of the parent issue, for a subtask or an issue in an epic.", None),
                p("labels", list[str], "Labels to set on the issue.", []),
                p("priority", str | None, "The priority name, for example High.", None),
            ),
            "issues.get": read(
                "Returns the details for an issue.",
                issue,
                p("fields", list[str], "The fields to return; all navigable fields when omitted.", []),
                p(
                    "expand",
                    str | None,
                    "Additional information to include, such as renderedFields or changelog.",
                    None,
                ),
            ),
            "issues.edit": write(
                "Edits an issue. The fields that can be edited are listed on the issue's edit screen. "
                "Status cannot be changed here: use a transition.",
                issue,
                p("fields", dict[str, Any], "Field IDs and the values to set, such as summary or labels."),
                p("notifyUsers", bool, "Whether a notification email about the update is sent to watchers.", True),
            ),
            "issues.delete": write(
                "Deletes an issue. An issue with subtasks cannot be deleted unless deleteSubtasks is true.",
                issue,
                p("deleteSubtasks", bool, "Whether the issue's subtasks are deleted with it.", False),
                confirm=True,
            ),
            "issues.assign": write(
                "Assigns an issue to a user. Use accountId -1 for automatic assignment, null to unassign.",
                issue,
                p("accountId", str | None, "The account ID of the user; null removes the assignee.", None),
            ),
            "issues.search": read(
                "Searches for issues using JQL.",
                p("jql", str, "The JQL query, for example project = PROJ AND status != Done ORDER BY priority."),
                p("fields", list[str], "The fields to return for each issue.", ["summary", "status", "assignee"]),
                _START_AT,
                _MAX_RESULTS,
            ),
            "issues.transitions.list": read(
                "Returns the transitions the user can perform on an issue, based on the issue's status.",
                issue,
            ),
            "issues.transitions.perform": write(
                "Performs an issue transition and, if the transition has a screen, updates its fields.",
                issue,
                p("transition", str, "The ID of the transition to perform, from the issue's transitions."),
                p("fields", dict[str, Any], "Fields on the transition screen to set, such as resolution.", {}),
                p("comment", str | None, "A comment to add with the transition.", None),
            ),
            "issues.comments.list": read(
                "Returns all comments for an issue, oldest first.",
                issue,
                _START_AT,
                _MAX_RESULTS,
                p("orderBy", Literal["created", "-created"], "Order the comments by created date.", "created"),
            ),
            "issues.comments.add": write(
                "Adds a comment to an issue.",
                issue,
                p("body", str, "The comment text, in Atlassian Document Format or plain text."),
                p("visibility", str | None, "Restrict the comment to a group or project role.", None),
            ),
            "issues.worklogs.list": read(
                "Returns worklogs for an issue, starting from the oldest worklog.",
                issue,
                p("startedAfter", datetime | None, "Only worklogs started on or after this time.", None),
            ),
            "issues.worklogs.add": write(
                "Adds a worklog to an issue. Time tracking must be enabled.",
                issue,
                p("timeSpent", str, "The time spent working on the issue, as days (#d), hours (#h) or minutes (#m)."),
                p("started", datetime, "The datetime on which the worklog effort was started."),
                p("comment", str | None, "A comment about the worklog.", None),
                p("adjustEstimate", Literal["auto", "leave", "new", "manual"], "How to update the estimate.", "auto"),
            ),
            "issues.watchers.add": write(
                "Adds a user as a watcher of an issue.",
                issue,
                p("accountId", str, "The account ID of the user to add as a watcher."),
            ),
            "issue_links.create": write(
                "Creates a link between two issues, such as blocks, duplicates or relates to.",
                p("type", str, "The name of the issue link type, for example Blocks or Duplicate."),
                p("inwardIssue", str, "The key of the inward issue, e.g. the issue that is blocked."),
                p("outwardIssue", str, "The key of the outward issue, e.g. the issue that blocks."),
            ),
            "projects.list": read(
                "Returns a paginated list of projects visible to the user.",
                p("query", str | None, "Filter by project key or name, case insensitive.", None),
                _START_AT,
                _MAX_RESULTS,
            ),
            "users.search": read(
                "Returns a list of active users that match the search string, by display name or email.",
                p("query", str, "A query string matched against display name and email address."),
                _MAX_RESULTS,
            ),
            "boards.list": read(
                "Returns all boards the user has permission to view.",
                p("projectKeyOrId", str | None, "Only boards of this project.", None),
                p("type", Literal["scrum", "kanban", "simple"] | None, "Filter by board type.", None),
                _START_AT,
            ),
            "boards.backlog.list": read(
                "Returns all issues from the board's backlog, ordered by rank.",
                board,
                p("jql", str | None, "Filter the backlog issues with JQL.", None),
                _START_AT,
                _MAX_RESULTS,
            ),
            "sprints.list": read(
                "Returns all sprints from a board.",
                board,
                p("state", Literal["future", "active", "closed"] | None, "Filter by sprint state.", None),
            ),
            "sprints.create": write(
                "Creates a future sprint on a board.",
                p("originBoardId", int, "The board the sprint is created on."),
                p("name", str, "The sprint name."),
                p("startDate", datetime | None, "The planned start date.", None),
                p("endDate", datetime | None, "The planned end date.", None),
                p("goal", str | None, "The sprint goal.", None),
            ),
            "sprints.update": write(
                "Performs a partial update of a sprint. Set state to active to start it, or closed to complete it.",
                sprint,
                p("state", Literal["future", "active", "closed"] | None, "The new sprint state.", None),
                p("name", str | None, "The new name.", None),
                p("endDate", datetime | None, "The new end date.", None),
                p("goal", str | None, "The new goal.", None),
            ),
            "sprints.issues.list": read(
                "Returns all issues in a sprint, for a given sprint ID.",
                sprint,
                p("jql", str | None, "Filter the sprint's issues with JQL.", None),
                _START_AT,
                _MAX_RESULTS,
            ),
            "sprints.issues.move": write(
                "Moves issues to a sprint, for a given sprint ID. Issues can only be moved to open or active sprints.",
                sprint,
                issues,
            ),
            "backlog.issues.move": write(
                "Move issues to the backlog. This removes future and active sprint values from the issues.",
                issues,
            ),
        },
    )


def _linear() -> Module:
    issue_id = p("id", str, "The issue's UUID or its identifier, such as ENG-123.")
    team = p("teamId", str, "The ID or key of the team.")
    first = p("first", int, "The number of items to return.", 50)
    after = p("after", str | None, "A cursor to return items after.", None)
    return _app(
        "linear",
        "Linear: issues, projects, cycles and teams.",
        {
            "issues.list": read(
                "List issues in the workspace, filtered by team, assignee, state, label, project or cycle.",
                p("teamId", str | None, "Only issues of this team.", None),
                p("assigneeId", str | None, "Only issues assigned to this user; 'me' for the viewer.", None),
                p("stateName", str | None, "Only issues in this workflow state, e.g. In Progress.", None),
                p("labelName", str | None, "Only issues with this label.", None),
                p("projectId", str | None, "Only issues in this project.", None),
                p("cycleId", str | None, "Only issues in this cycle; 'current' for the team's active cycle.", None),
                p("includeArchived", bool, "Include archived issues.", False),
                first,
                after,
            ),
            "issues.search": read(
                "Search issues by text in their title, description and comments.",
                p("term", str, "The search term."),
                p("teamId", str | None, "Restrict the search to one team.", None),
                first,
            ),
            "issues.get": read("Retrieve an issue by ID or identifier, with its relations and attachments.", issue_id),
            "issues.create": write(
                "Creates a new issue.",
                team,
                p("title", str, "The title of the issue."),
                p("description", str | None, "The issue description in Markdown.", None),
                p("assigneeId", str | None, "The user to assign the issue to.", None),
                p("priority", int, "0 = No priority, 1 = Urgent, 2 = High, 3 = Normal, 4 = Low.", 0),
                p("stateId", str | None, "The workflow state; the team's default when omitted.", None),
                p("labelIds", list[str], "Labels to apply.", []),
                p("projectId", str | None, "The project the issue belongs to.", None),
                p("cycleId", str | None, "The cycle the issue belongs to.", None),
                p("estimate", int | None, "The estimate in points.", None),
            ),
            "issues.update": write(
                "Updates an issue.",
                issue_id,
                p("title", str | None, "New title.", None),
                p("description", str | None, "New description in Markdown.", None),
                p("assigneeId", str | None, "New assignee.", None),
                p("stateId", str | None, "New workflow state.", None),
                p("priority", int | None, "New priority.", None),
                p("cycleId", str | None, "Move the issue into this cycle.", None),
                p("dueDate", str | None, "The due date, YYYY-MM-DD.", None),
            ),
            "issues.archive": write(
                "Archives an issue. Archived issues are hidden from views and can be restored.",
                issue_id,
                p("trash", bool, "Whether to trash the issue instead.", False),
            ),
            "comments.create": write(
                "Creates a new comment on an issue.",
                p("issueId", str, "The issue to comment on."),
                p("body", str, "The comment content in Markdown."),
                p("parentId", str | None, "The comment to reply to, for a threaded reply.", None),
            ),
            "projects.list": read(
                "List projects in the workspace.",
                p("teamId", str | None, "Only projects of this team.", None),
                p("state", Literal["planned", "started", "paused", "completed", "canceled"] | None, "Filter.", None),
                first,
            ),
            "projects.create": write(
                "Creates a new project.",
                p("name", str, "The name of the project."),
                p("teamIds", list[str], "The teams the project belongs to."),
                p("description", str | None, "The project description.", None),
                p("leadId", str | None, "The project lead.", None),
                p("startDate", str | None, "The planned start date, YYYY-MM-DD.", None),
                p("targetDate", str | None, "The planned target date, YYYY-MM-DD.", None),
            ),
            "projects.update": write(
                "Updates a project.",
                p("id", str, "The project ID."),
                p("name", str | None, "New name.", None),
                p("state", str | None, "New project state.", None),
                p("leadId", str | None, "New lead.", None),
                p("targetDate", str | None, "New target date, YYYY-MM-DD.", None),
            ),
            "cycles.list": read(
                "List a team's cycles with their start and end dates and progress.",
                team,
                p("filter", Literal["past", "current", "upcoming", "all"], "Which cycles to return.", "all"),
            ),
            "teams.list": read("List teams in the workspace.", first),
            "workflow_states.list": read(
                "List the workflow states of a team, grouped by type (backlog, unstarted, started, completed).",
                team,
            ),
            "issue_labels.list": read(
                "List issue labels, for the workspace or a team.", p("teamId", str | None, "Only this team.", None)
            ),
        },
    )


def _notion() -> Module:
    page_id = p("page_id", str, "The identifier of the Notion page.")
    database_id = p("database_id", str, "The identifier of the Notion database.")
    block_id = p("block_id", str, "The identifier of the block. A page ID is also a block ID.")
    start_cursor = p("start_cursor", str | None, "Return results starting after this cursor.", None)
    page_size = p("page_size", int, "The number of items from the full list desired in the response. Max 100.", 100)
    return _app(
        "notion",
        "Notion: pages, databases, blocks and comments shared with the integration.",
        {
            "search": read(
                "Searches all pages and databases shared with the integration whose title matches the query.",
                p("query", str, "The text compared against page and database titles."),
                p("filter", Literal["page", "database"] | None, "Limit results to pages or to databases.", None),
                p("sort", Literal["ascending", "descending"], "Sort by last_edited_time.", "descending"),
                start_cursor,
                page_size,
            ),
            "pages.create": write(
                "Creates a new page as a child of an existing page or database.",
                p("parent", dict[str, str], "The parent: {page_id: ...} or {database_id: ...}."),
                p("properties", dict[str, Any], "Property values; for a page under a page, only title."),
                p("children", list[dict[str, Any]], "Page content as an array of block objects.", []),
                p("icon", str | None, "An emoji or external file URL.", None),
            ),
            "pages.retrieve": read(
                "Retrieves a Page object: its properties, not its content. Use block children for content.",
                page_id,
                p("filter_properties", list[str], "Only return these property IDs.", []),
            ),
            "pages.update": write(
                "Updates the properties, icon or cover of a page. Set in_trash to true to delete the page.",
                page_id,
                p("properties", dict[str, Any], "Property values to change.", {}),
                p("in_trash", bool | None, "Set to true to move the page to trash, false to restore it.", None),
            ),
            "pages.properties.retrieve": read(
                "Retrieves a property_item object for a given page and property, paginated for relations and rollups.",
                page_id,
                p("property_id", str, "The property's ID."),
                start_cursor,
            ),
            "databases.query": read(
                "Gets a list of pages contained in the database, filtered and ordered by the request's conditions.",
                database_id,
                p("filter", dict[str, Any] | None, "Filter conditions on the database's properties.", None),
                p("sorts", list[dict[str, str]], "Sort criteria, by property or timestamp.", []),
                start_cursor,
                page_size,
            ),
            "databases.retrieve": read("Retrieves a database object: its title and property schema.", database_id),
            "databases.create": write(
                "Creates a database as a subpage of a parent page, with the given properties schema.",
                p("parent", dict[str, str], "The parent page: {page_id: ...}."),
                p("title", str, "The database title."),
                p("properties", dict[str, Any], "The property schema: column names and types."),
            ),
            "databases.update": write(
                "Updates a database's title, description or properties. Add, rename or remove properties.",
                database_id,
                p("title", str | None, "A new title.", None),
                p("properties", dict[str, Any], "Properties to add or change; null removes one.", {}),
            ),
            "blocks.children.list": read(
                "Returns a paginated array of the child blocks contained in a block or page.",
                block_id,
                start_cursor,
                page_size,
            ),
            "blocks.children.append": write(
                "Creates and appends new children blocks to the parent block.",
                block_id,
                p("children", list[dict[str, Any]], "Child content to append, as block objects. Up to 100."),
                p("after", str | None, "Append after this block ID instead of at the end.", None),
            ),
            "blocks.update": write(
                "Updates the content of a block, based on its type.",
                block_id,
                p("content", dict[str, Any], "The block type object with its new value, e.g. {paragraph: ...}."),
            ),
            "blocks.delete": write("Sets a block, including a page block, to archived: true.", block_id),
            "comments.list": read(
                "Retrieves the un-resolved comments from a page or block.",
                block_id,
                start_cursor,
                page_size,
            ),
            "comments.create": write(
                "Creates a comment on a page or in an existing discussion thread.",
                p("parent_page_id", str | None, "The page to comment on.", None),
                p("discussion_id", str | None, "The discussion thread to reply in.", None),
                p("rich_text", str, "The comment text."),
            ),
            "users.list": read("Returns a paginated list of the workspace's users, including bots.", start_cursor),
        },
    )


def _confluence() -> Module:
    page_id = p("id", int, "The ID of the page.")
    space_id = p("space_id", int, "The ID of the space.")
    limit = p("limit", int, "Maximum number of results to return per page.", 25)
    cursor = p("cursor", str | None, "Opaque cursor for pagination, from the Link header.", None)
    body_format = p(
        "body_format", Literal["storage", "atlas_doc_format", "view"], "The content format of the body.", "storage"
    )
    return _app(
        "confluence",
        "Confluence Cloud: spaces, pages, attachments and comments.",
        {
            "spaces.list": read(
                "Returns all spaces, optionally filtered by key, type or status.",
                p("keys", list[str], "Filter by space keys.", []),
                p("type", Literal["global", "personal"] | None, "Filter by space type.", None),
                p("status", Literal["current", "archived"] | None, "Filter by status.", None),
                limit,
                cursor,
            ),
            "spaces.get": read("Returns a specific space.", p("id", int, "The ID of the space.")),
            "pages.list": read(
                "Returns all pages in a space.",
                space_id,
                p("title", str | None, "Filter by exact page title.", None),
                p("sort", str | None, "Sort order, e.g. -modified-date.", None),
                limit,
                cursor,
            ),
            "pages.get": read(
                "Returns a specific page, with its body in the requested format.",
                page_id,
                body_format,
                p("version", int | None, "Retrieve a previously published version.", None),
            ),
            "pages.create": write(
                "Creates a page in the space. Pages are created as published by default.",
                p("spaceId", int, "The ID of the space."),
                p("title", str, "The title of the page."),
                p("body", str, "The page body, in the representation given by representation."),
                p("representation", Literal["storage", "atlas_doc_format", "wiki"], "The body format.", "storage"),
                p("parentId", int | None, "The parent page; the space homepage when omitted.", None),
                p("status", Literal["current", "draft"], "current to publish, draft to save a draft.", "current"),
            ),
            "pages.update": write(
                "Update a page by id. The version number must be the current version plus one.",
                page_id,
                p("title", str, "The page title."),
                p("body", str, "The full new body; it replaces the existing body."),
                p("version", int, "The new version number."),
                p("versionMessage", str | None, "A message describing the change.", None),
            ),
            "pages.delete": write(
                "Delete a page by id. The page is moved to the trash, or purged if already trashed and purge is true.",
                page_id,
                p("purge", bool, "Permanently delete a trashed page.", False),
                confirm=True,
            ),
            "pages.children.list": read("Returns all child pages for the given page id.", page_id, limit, cursor),
            "search": read(
                "Searches for content using the Confluence Query Language (CQL).",
                p("cql", str, 'The CQL query, for example type=page AND space=ENG AND text ~ "onboarding".'),
                p("excerpt", Literal["highlight", "indexed", "none"], "The excerpt strategy.", "highlight"),
                limit,
                cursor,
            ),
            "attachments.list": read(
                "Returns the attachments of a specific page.",
                page_id,
                p("mediaType", str | None, "Filter by media type.", None),
                p("filename", str | None, "Filter by file name.", None),
                limit,
            ),
            "attachments.upload": write(
                "Adds one or more attachments to a piece of content. To update an existing attachment, "
                "upload a file with the same name.",
                p("contentId", int, "The ID of the page or blog post."),
                p("file_ids", list[str], "The files to attach."),
                p("comment", str | None, "A comment for the attachment.", None),
                p("minorEdit", bool, "Whether watchers are not notified.", True),
            ),
            "labels.add": write(
                "Adds labels to a piece of content. Does not modify existing labels.",
                p("contentId", int, "The ID of the content."),
                p("labels", list[str], "Label names; prefixes such as global: are allowed."),
            ),
            "footer_comments.create": write(
                "Create a footer comment on a page or blog post, or a reply to a comment.",
                p("pageId", int | None, "The page to comment on.", None),
                p("parentCommentId", int | None, "The comment to reply to.", None),
                p("body", str, "The comment body in storage format."),
            ),
        },
    )


def _zendesk() -> Module:
    ticket_id = p("ticket_id", int, "The ID of the ticket.")
    page_size = p("per_page", int, "Number of records to return per page.", 100)
    return _app(
        "zendesk",
        "Zendesk Support: tickets, end users, macros and customer satisfaction.",
        {
            "tickets.list": read(
                "List Tickets. Archived tickets are not included.",
                p("sort_by", Literal["created_at", "updated_at", "status", "id"], "Sort field.", "updated_at"),
                p("external_id", str | None, "Lists tickets by external id.", None),
                page_size,
            ),
            "tickets.show": read("Returns a number of ticket properties, not the comments.", ticket_id),
            "tickets.create": write(
                "Create Ticket. The first comment is the ticket's description.",
                p("subject", str, "The value of the subject field for this ticket."),
                p("comment", str, "The ticket's first comment (its description)."),
                p("requester_email", str | None, "The requester; created as an end user if unknown.", None),
                p("priority", Literal["urgent", "high", "normal", "low"] | None, "The urgency.", None),
                p("type", Literal["problem", "incident", "question", "task"] | None, "The ticket type.", None),
                p("group_id", int | None, "The group this ticket is assigned to.", None),
                p("tags", list[str], "The array of tags applied to this ticket.", []),
            ),
            "tickets.update": write(
                "Update Ticket: change status, priority, assignee or fields, and add a public reply or internal note.",
                ticket_id,
                p("status", Literal["new", "open", "pending", "hold", "solved", "closed"] | None, "State.", None),
                p("comment_body", str | None, "A comment to add to the ticket.", None),
                p("public", bool, "true for a public reply to the requester, false for an internal note.", True),
                p("assignee_id", int | None, "The agent currently assigned to the ticket.", None),
                p("priority", str | None, "New priority.", None),
                p("custom_fields", dict[str, Any], "Custom field values by field ID.", {}),
            ),
            "tickets.delete": write(
                "Delete Ticket. Deleted tickets go to the deleted tickets view.", ticket_id, confirm=True
            ),
            "tickets.merge": write(
                "Merges one or more tickets into the ticket with the specified id. Source tickets are closed.",
                ticket_id,
                p("ids", list[int], "Ids of tickets to merge into the target ticket."),
                p("target_comment", str | None, "Private comment added to the target ticket.", None),
                p("source_comment", str | None, "Private comment added to the source tickets.", None),
                confirm=True,
            ),
            "tickets.comments.list": read(
                "Returns the comments added to the ticket: public replies and internal notes, oldest first.",
                ticket_id,
                p("include_inline_images", bool, "Include inline images as attachments.", False),
                page_size,
            ),
            "tickets.tags.add": write(
                "Adds tags to the ticket, keeping its existing tags.",
                ticket_id,
                p("tags", list[str], "Tags to add."),
            ),
            "search": read(
                "Returns search results for tickets, users and organizations, using the Zendesk search syntax.",
                p("query", str, "The search query, for example type:ticket status:open requester:*@acme.com."),
                p("sort_by", str | None, "updated_at, created_at, priority, status or ticket_type.", None),
                p("sort_order", Literal["asc", "desc"], "Sort direction.", "desc"),
            ),
            "users.search": read(
                "Returns users who match the search criteria: name, email, phone or external id.",
                p("query", str, "A name, email address or search expression."),
                p("external_id", str | None, "Find a user by external id.", None),
            ),
            "users.create": write(
                "Create User. Role defaults to end-user.",
                p("name", str, "The user's name."),
                p("email", str, "The user's primary email address."),
                p("role", Literal["end-user", "agent", "admin"], "The user's role.", "end-user"),
                p("organization_id", int | None, "The user's organization.", None),
            ),
            "organizations.list": read("List Organizations.", page_size),
            "macros.list": read(
                "Lists the shared and personal macros available to the current user.",
                p("category", str | None, "Filter by category.", None),
                p("active", bool | None, "Filter by active macros if true, inactive if false.", None),
            ),
            "macros.apply": write(
                "Applies a macro to a ticket: returns the ticket's changes and the comment the macro would add.",
                ticket_id,
                p("macro_id", int, "The ID of the macro."),
            ),
            "satisfaction_ratings.list": read(
                "List Satisfaction Ratings, optionally by score and time range.",
                p("score", Literal["offered", "unoffered", "received", "good", "bad"] | None, "Filter.", None),
                p("start_time", datetime | None, "Ratings created after this time.", None),
                p("end_time", datetime | None, "Ratings created before this time.", None),
            ),
        },
    )


# --------------------------------------------------------------------------------------
# Operations: incident response, errors, observability, edge
# --------------------------------------------------------------------------------------

_DEVOPS = ("devops",)


def _pagerduty() -> Module:
    incident = p("id", str, "The ID of the incident.")
    from_email = p("from_email", str, "The email address of a valid user on the account making the request.")
    since = p("since", datetime | None, "The start of the date range over which you want to search.", None)
    until = p("until", datetime | None, "The end of the date range over which you want to search.", None)
    limit = p("limit", int, "The number of results per page.", 25)
    return _app(
        "pagerduty",
        "PagerDuty: incidents, services, on-call schedules and escalation policies.",
        {
            "incidents.list": read(
                "List existing incidents.",
                p("statuses", list[Literal["triggered", "acknowledged", "resolved"]], "Return only these.", []),
                p("urgencies", list[Literal["high", "low"]], "Return only these urgencies.", []),
                p("service_ids", list[str], "Return only incidents of these services.", []),
                p("user_ids", list[str], "Return only incidents assigned to these users.", []),
                since,
                until,
                limit,
            ),
            "incidents.get": read("Show detailed information about an incident.", incident),
            "incidents.create": write(
                "Create an incident synchronously without a corresponding event from a monitoring service.",
                from_email,
                p("title", str, "A succinct description of the nature, symptoms, cause, or effect of the incident."),
                p("service_id", str, "The service the incident is on."),
                p("urgency", Literal["high", "low"], "The urgency of the incident.", "high"),
                p("body", str | None, "Additional incident details.", None),
                p("escalation_policy_id", str | None, "Use this escalation policy instead of the service's.", None),
                p("incident_key", str | None, "A de-duplication key.", None),
            ),
            "incidents.update": write(
                "Acknowledge, resolve, escalate or reassign an incident.",
                incident,
                from_email,
                p("status", Literal["acknowledged", "resolved"] | None, "The new status.", None),
                p("escalation_level", int | None, "Escalate the incident to this level.", None),
                p("assignee_ids", list[str], "Reassign the incident to these users.", []),
                p("resolution", str | None, "The resolution note, when resolving.", None),
            ),
            "incidents.snooze": write(
                "Snooze an acknowledged incident: it re-triggers after the duration.",
                incident,
                from_email,
                p("duration", int, "The number of seconds to snooze the incident for."),
            ),
            "incidents.merge": write(
                "Merge a list of source incidents into this incident.",
                incident,
                from_email,
                p("source_incidents", list[str], "The IDs of the incidents to merge."),
                confirm=True,
            ),
            "incidents.notes.create": write(
                "Create a new note for the specified incident.",
                incident,
                from_email,
                p("content", str, "The note content."),
            ),
            "events.enqueue": write(
                "Send an alert event to the Events API v2: trigger, acknowledge or resolve an alert by dedup_key.",
                p("routing_key", str, "The integration key of the service integration."),
                p("event_action", Literal["trigger", "acknowledge", "resolve"], "The type of event."),
                p("summary", str, "A brief text summary of the event, used for the alert's title."),
                p("source", str, "The unique location of the affected system, preferably a hostname or FQDN."),
                p("severity", Literal["critical", "error", "warning", "info"], "The perceived severity."),
                p("dedup_key", str | None, "Deduplication key for correlating triggers and resolves.", None),
            ),
            "services.list": read(
                "List existing services.",
                p("query", str | None, "Filters the result, showing only the records whose name matches.", None),
                p("team_ids", list[str], "Only services of these teams.", []),
                limit,
            ),
            "services.update": write(
                "Update an existing service: name, escalation policy, urgency rules, or disable it.",
                p("id", str, "The ID of the service."),
                p("status", Literal["active", "disabled"] | None, "Disable or re-enable the service.", None),
                p("escalation_policy_id", str | None, "The escalation policy used by this service.", None),
                p("name", str | None, "The name of the service.", None),
            ),
            "oncalls.list": read(
                "List the on-call entries during a given time range.",
                p("schedule_ids", list[str], "Filters the results, showing only on-calls for these schedules.", []),
                p("escalation_policy_ids", list[str], "Only on-calls for these escalation policies.", []),
                p("user_ids", list[str], "Only on-calls for these users.", []),
                since,
                until,
                p("earliest", bool, "Only the earliest on-call for each combination of policy and level.", False),
            ),
            "schedules.list": read(
                "List the on-call schedules.",
                p("query", str | None, "Filters the result, showing only records whose name matches.", None),
                limit,
            ),
            "schedules.overrides.create": write(
                "Create one or more overrides, each for a specific user covering a time range on a schedule.",
                p("schedule_id", str, "The ID of the schedule."),
                p("user_id", str, "The user who takes the shift."),
                p("start", datetime, "The start of the override."),
                p("end", datetime, "The end of the override."),
            ),
            "escalation_policies.list": read(
                "List all of the existing escalation policies.",
                p("query", str | None, "Filters the result, showing only records whose name matches.", None),
                p("user_ids", list[str], "Only policies on which any of these users is a target.", []),
                limit,
            ),
            "escalation_policies.get": read(
                "Get information about an existing escalation policy and its rules.",
                p("id", str, "The ID of the escalation policy."),
            ),
            "maintenance_windows.create": write(
                "Create a new maintenance window for the specified services. No new incidents will be created "
                "for a service that is in maintenance.",
                from_email,
                p("service_ids", list[str], "The services to put in maintenance."),
                p("start_time", datetime, "The maintenance window's start time."),
                p("end_time", datetime, "The maintenance window's end time."),
                p("description", str | None, "A description for this maintenance window.", None),
            ),
        },
        namespace=_DEVOPS,
    )


def _sentry() -> Module:
    org = p("organization_id_or_slug", str, "The ID or slug of the organization.")
    project = p("project_id_or_slug", str, "The ID or slug of the project.")
    issue = p("issue_id", str, "The ID of the issue.")
    version = p("version", str, "The version identifier of the release.")
    return _app(
        "sentry",
        "Sentry: error issues and events, releases and projects.",
        {
            "issues.list": read(
                "Return a list of issues (groups) bound to a project.",
                org,
                project,
                p("query", str, "A Sentry structured search query.", "is:unresolved"),
                p("statsPeriod", Literal["", "24h", "14d"], "The period of the stats to return.", "24h"),
                p("cursor", str | None, "A pointer to the last object fetched.", None),
            ),
            "issues.get": read(
                "Return details on an individual issue: title, culprit, counts, first and last seen.", org, issue
            ),
            "issues.update": write(
                "Updates an individual issue's attributes. Only the attributes submitted are modified.",
                org,
                issue,
                p(
                    "status",
                    Literal["resolved", "resolvedInNextRelease", "unresolved", "ignored"] | None,
                    "The new status for the issue.",
                    None,
                ),
                p("statusDetails", dict[str, Any], "Details for the status, e.g. ignoreDuration or inRelease.", {}),
                p("assignedTo", str | None, "The actor id (or username) of the user or team to assign.", None),
                p("hasSeen", bool | None, "In case this API call is invoked with a user context.", None),
                p("isBookmarked", bool | None, "Bookmark the issue for the current user.", None),
            ),
            "issues.delete": write("Removes an individual issue and its events.", org, issue, confirm=True),
            "issues.events.list": read(
                "Return a list of error events bound to an issue.",
                org,
                issue,
                p("full", bool, "Include the full event body, including the stack trace.", False),
                p("query", str | None, "Filter the events, e.g. release:1.2.0.", None),
            ),
            "issues.events.latest": read(
                "Retrieves the details of the latest event for an issue, with its exception and breadcrumbs.",
                org,
                issue,
            ),
            "releases.list": read(
                "Return a list of releases for a given organization.",
                org,
                p("query", str | None, "Only releases whose version starts with this.", None),
            ),
            "releases.create": write(
                "Create a new release for the given organization, optionally with its commits.",
                org,
                version,
                p("projects", list[str], "The slugs of the projects the release belongs to."),
                p("refs", list[dict[str, str]], "Repository and commit refs, for suspect commits.", []),
                p("dateReleased", datetime | None, "When the release went live; now when omitted.", None),
            ),
            "releases.deploys.create": write(
                "Create a deploy for a given release.",
                org,
                version,
                p("environment", str, "The environment you're deploying to."),
                p("name", str | None, "The optional name of the deploy.", None),
                p("dateFinished", datetime | None, "When the deploy ended.", None),
            ),
            "releases.files.upload": write(
                "Upload a new file for the given release, such as a source map or minified JavaScript artifact.",
                org,
                version,
                p("file_id", str, "The file to upload."),
                p("name", str, "The full URL of the file, e.g. ~/static/app.min.js.map."),
                p("dist", str | None, "The name of the distribution.", None),
            ),
            "projects.list": read("Return a list of projects available to the authenticated session.", org),
            "projects.create": write(
                "Create a new project bound to a team.",
                org,
                p("team_id_or_slug", str, "The team the project belongs to."),
                p("name", str, "The name for the project."),
                p("platform", str | None, "The platform, e.g. python or javascript-react.", None),
            ),
            "projects.keys.list": read(
                "Return a list of client keys bound to a project, with their DSNs.",
                org,
                project,
                p("status", Literal["active", "inactive"] | None, "Filter by key status.", None),
            ),
        },
        namespace=_DEVOPS,
    )


def _datadog() -> Module:
    monitor = p("monitor_id", int, "The ID of the monitor.")
    return _app(
        "datadog",
        "Datadog: metrics, monitors, dashboards, logs and downtimes.",
        {
            "metrics.query": read(
                "Query timeseries points for any metrics in an arbitrary time window.",
                p("query", str, "Query string, e.g. avg:system.cpu.user{env:prod} by {host}."),
                p("from_time", int, "Start of the queried time period, seconds since the Unix epoch."),
                p("to_time", int, "End of the queried time period, seconds since the Unix epoch."),
            ),
            "metrics.list_active": read(
                "Get the list of actively reporting metrics from a given time until now.",
                p("from_time", int, "List metrics reporting since this time, in seconds since the Unix epoch."),
                p("host", str | None, "Hostname for filtering the list of metrics.", None),
                p("tag_filter", str | None, "Filter metrics by tags, e.g. env:prod.", None),
            ),
            "metrics.submit": write(
                "Submit series of metric points to Datadog.",
                p("metric", str, "The name of the timeseries."),
                p("points", list[tuple[int, float]], "Points as [timestamp, value] pairs."),
                p("type", Literal["gauge", "count", "rate"], "The type of metric.", "gauge"),
                p("tags", list[str], "Tags for the series.", []),
            ),
            "monitors.list": read(
                "Get all monitor details, filtered by name, tags or state.",
                p("name", str | None, "A string to filter monitors by name.", None),
                p("monitor_tags", str | None, "Comma-separated service or custom tags.", None),
                p("group_states", str | None, "Include group states: all, alert, warn, no data.", None),
            ),
            "monitors.get": read("Get a monitor's details, including its current state.", monitor),
            "monitors.create": write(
                "Create a monitor using the specified options.",
                p("type", Literal["metric alert", "query alert", "log alert", "service check", "composite"], "Type."),
                p("query", str, "The monitor query, e.g. avg(last_5m):avg:http.errors{service:api} > 0.05."),
                p("name", str, "The monitor name."),
                p("message", str, "A message in notifications; can @-mention users, teams or @pagerduty."),
                p("thresholds", dict[str, float], "Critical and warning thresholds.", {}),
                p("tags", list[str], "Tags associated to the monitor.", []),
            ),
            "monitors.update": write(
                "Edit the specified monitor: query, thresholds, message or options.",
                monitor,
                p("query", str | None, "New query.", None),
                p("thresholds", dict[str, float] | None, "New thresholds.", None),
                p("message", str | None, "New notification message.", None),
            ),
            "monitors.delete": write("Delete the specified monitor.", monitor, confirm=True),
            "downtimes.create": write(
                "Schedule a downtime: silence monitor notifications for a scope, once or on a recurrence.",
                p("scope", str, "The scope to which the downtime applies, e.g. host:db-1 or env:staging."),
                p("monitor_id", int | None, "A single monitor to silence; all matching monitors when omitted.", None),
                p("start", datetime | None, "Start of the downtime; now when omitted.", None),
                p("end", datetime | None, "End of the downtime; indefinite when omitted.", None),
                p("message", str | None, "A message to include with notifications for this downtime.", None),
            ),
            "dashboards.list": read(
                "Get all dashboards.",
                p("filter_shared", bool | None, "Only shared custom dashboards.", None),
                p("count", int, "The maximum number of dashboards returned.", 100),
            ),
            "dashboards.get": read(
                "Get a dashboard using the specified ID.", p("dashboard_id", str, "The ID of the dashboard.")
            ),
            "dashboards.create": write(
                "Create a dashboard using the specified options.",
                p("title", str, "Title of the dashboard."),
                p("layout_type", Literal["ordered", "free"], "Layout type of the dashboard."),
                p("widgets", list[dict[str, Any]], "List of widgets to display on the dashboard."),
                p("template_variables", list[dict[str, str]], "Template variables, e.g. env or service.", []),
            ),
            "logs.search": read(
                "List endpoint returns logs that match a log search query. Results are paginated.",
                p("filter_query", str, "Search query following logs syntax, e.g. service:web status:error."),
                p("filter_from", str, "Minimum time for the requested logs, e.g. now-15m.", "now-15m"),
                p("filter_to", str, "Maximum time for the requested logs.", "now"),
                p("sort", Literal["timestamp", "-timestamp"], "Order of logs in results.", "-timestamp"),
                p("page_limit", int, "Maximum number of logs in the response.", 50),
            ),
            "logs.aggregate": read(
                "Aggregate events into buckets and compute metrics and timeseries.",
                p("query", str, "The search query, following the log search syntax."),
                p("compute", list[dict[str, str]], "The computations: count, cardinality, avg, pc99 of a measure."),
                p("group_by", list[str], "Facets to group by, e.g. service or @http.status_code.", []),
                p("from_time", str, "The minimum time, e.g. now-1h.", "now-15m"),
                p("to_time", str, "The maximum time.", "now"),
            ),
            "events.create": write(
                "Post an event to the event stream, e.g. a deploy marker that can be overlaid on graphs.",
                p("title", str, "The event title."),
                p("text", str, "The body of the event. Limited to 4000 characters."),
                p("tags", list[str], "Tags to apply to the event.", []),
                p("alert_type", Literal["error", "warning", "info", "success"], "Type of the event.", "info"),
            ),
        },
        namespace=_DEVOPS,
    )


def _cloudflare() -> Module:
    zone = p("zone_id", str, "Identifier of the zone.")
    record = p("dns_record_id", str, "Identifier of the DNS record.")
    record_type = Literal["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SRV", "CAA"]
    return _app(
        "cloudflare",
        "Cloudflare: zones, DNS records, cache and firewall.",
        {
            "zones.list": read(
                "Lists, searches, sorts, and filters your zones.",
                p("name", str | None, "A domain name.", None),
                p("status", Literal["initializing", "pending", "active", "moved"] | None, "Zone status.", None),
                p("per_page", int, "Number of zones per page.", 20),
            ),
            "zones.get": read("Zone Details: plan, name servers, status.", zone),
            "zones.settings.edit": write(
                "Edit a single zone setting, such as security_level, ssl, always_use_https or development_mode.",
                zone,
                p("setting_id", str, "The setting name, e.g. security_level or development_mode."),
                p("value", str, "The new value, e.g. under_attack, high, on or off."),
            ),
            "zones.purge_cache": write(
                "Purge cached content: everything, or by URL, cache-tag, host or prefix.",
                zone,
                p("purge_everything", bool, "Remove all of the zone's cached files.", False),
                p("files", list[str], "URLs to purge.", []),
                p("tags", list[str], "Cache-Tag values to purge.", []),
                p("hosts", list[str], "Hostnames to purge.", []),
                confirm=True,
            ),
            "dns_records.list": read(
                "List, search, sort, and filter a zone's DNS records.",
                zone,
                p("type", record_type | None, "DNS record type.", None),
                p("name", str | None, "DNS record name (or @ for the zone apex).", None),
                p("content", str | None, "DNS record content, e.g. an IP address.", None),
                p("per_page", int, "Number of records per page.", 100),
            ),
            "dns_records.create": write(
                "Create a new DNS record for a zone.",
                zone,
                p("type", record_type, "Record type."),
                p("name", str, "DNS record name (or @ for the zone apex) in Punycode."),
                p("content", str, "A valid IPv4 address, hostname, or text, depending on the type."),
                p("ttl", int, "Time To Live in seconds; 1 means automatic.", 1),
                p("proxied", bool, "Whether the record is receiving the performance and security benefits.", False),
                p("comment", str | None, "Comments or notes about the DNS record.", None),
            ),
            "dns_records.update": write(
                "Update an existing DNS record. Only the fields given are changed.",
                zone,
                record,
                p("content", str | None, "New record content.", None),
                p("name", str | None, "New record name.", None),
                p("ttl", int | None, "New TTL.", None),
                p("proxied", bool | None, "Whether the record is proxied.", None),
            ),
            "dns_records.delete": write("Delete DNS Record.", zone, record, confirm=True),
            "dns_records.export": read("Export the zone's DNS records as a BIND config file.", zone),
            "firewall_rules.list": read(
                "Fetches firewall rules in a zone.",
                zone,
                p("paused", bool | None, "When true, indicates that the rule is currently paused.", None),
                p("action", str | None, "The action to search for.", None),
            ),
            "firewall_rules.create": write(
                "Create one or more firewall rules from a filter expression and an action.",
                zone,
                p("expression", str, 'The filter expression, e.g. (ip.src in {192.0.2.0/24}) or http.host eq "x".'),
                p("action", Literal["block", "challenge", "js_challenge", "managed_challenge", "allow", "log"], "Act."),
                p("description", str | None, "An informative summary of the firewall rule.", None),
            ),
            "firewall_rules.delete": write(
                "Deletes an existing firewall rule.", zone, p("rule_id", str, "Rule."), confirm=True
            ),
            "ip_access_rules.create": write(
                "Creates a new IP Access rule for a zone: block, challenge or allow an IP, range, ASN or country.",
                zone,
                p("mode", Literal["block", "challenge", "whitelist", "js_challenge", "managed_challenge"], "Action."),
                p("target", Literal["ip", "ip6", "ip_range", "asn", "country"], "The configuration target."),
                p("value", str, "The IP address, CIDR range, ASN or country code."),
                p("notes", str | None, "An informative summary of the rule.", None),
            ),
        },
        namespace=_DEVOPS,
    )


def heldout_catalog_a() -> list[Module]:
    """The held-out catalog, half A: about 140 operations across nine products."""
    return [
        _jira(),
        _linear(),
        _notion(),
        _confluence(),
        _zendesk(),
        _pagerduty(),
        _sentry(),
        _datadog(),
        _cloudflare(),
    ]


# --------------------------------------------------------------------------------------
# The labelled queries
# --------------------------------------------------------------------------------------

_PD = "devops.pagerduty."
_SENTRY = "devops.sentry."
_DD = "devops.datadog."
_CF = "devops.cloudflare."


def _q(
    text: str,
    alternates: tuple[str, str],
    acceptable: tuple[str, ...],
    kind: Literal["lexical", "paraphrase", "hard"],
) -> LabelledQuery:
    return LabelledQuery(text, alternates, acceptable, kind)


QUERIES_A: tuple[LabelledQuery, ...] = (
    # --- Jira
    _q(
        "log 3 hours of work on PROJ-123",
        ("record time spent on a jira issue", "add worklog"),
        ("jira.issues.worklogs.add",),
        "lexical",
    ),
    _q(
        "mark PROJ-88 as done",
        ("change the status of a jira ticket to Done", "jira transition issue"),
        ("jira.issues.transitions.perform",),
        "paraphrase",
    ),
    _q(
        "what's still left to do in the mobile team's current sprint",
        ("issues in the active sprint", "get sprint issues"),
        ("jira.sprints.issues.list", "jira.issues.search"),
        "paraphrase",
    ),
    _q(
        "start the next sprint on the web board",
        ("begin the planned sprint", "sprint start"),
        ("jira.sprints.update",),
        "lexical",
    ),
    _q(
        "pull PROJ-7 and PROJ-9 into this sprint",
        ("add tickets to the current sprint", "move issues to sprint"),
        ("jira.sprints.issues.move",),
        "paraphrase",
    ),
    _q(
        "my open jira tickets",
        ("jira issues assigned to me that aren't resolved", "jql search issues"),
        ("jira.issues.search",),
        "paraphrase",
    ),
    _q(
        "PROJ-12 can't start until PROJ-9 ships",
        ("mark one ticket as blocked by another", "create issue link blocks"),
        ("jira.issue_links.create",),
        "hard",
    ),
    _q(
        "give PROJ-40 to Dana",
        ("change who a jira ticket is assigned to", "assign issue to user"),
        ("jira.issues.assign",),
        "paraphrase",
    ),
    _q(
        "we won't finish these stories this sprint, take them out",
        ("move unfinished issues back to the backlog", "backlog move issues"),
        ("jira.backlog.issues.move",),
        "hard",
    ),
    _q(
        "what options do I have for moving PROJ-5 forward in the workflow",
        ("which statuses can this jira issue go to next", "get transitions"),
        ("jira.issues.transitions.list",),
        "hard",
    ),
    # --- Linear
    _q(
        "create a linear issue for the login bug",
        ("file a bug in Linear for the platform team", "issueCreate"),
        ("linear.issues.create",),
        "lexical",
    ),
    _q(
        "issues in the current linear cycle",
        ("what the team committed to in this cycle", "list cycle issues"),
        ("linear.issues.list", "linear.cycles.list"),
        "lexical",
    ),
    _q(
        "the Checkout revamp project slipped to March 15",
        ("change the target date of a linear project", "projectUpdate targetDate"),
        ("linear.projects.update",),
        "hard",
    ),
    _q(
        "get ENG-412 off the board, we're not doing it",
        ("hide a linear issue we dropped", "archive issue"),
        ("linear.issues.archive", "linear.issues.update"),
        "paraphrase",
    ),
    _q(
        "what columns does the platform team's linear board have",
        ("the statuses a linear issue can be in", "list workflow states"),
        ("linear.workflow_states.list",),
        "hard",
    ),
    _q(
        "search linear issues mentioning checkout timeout",
        ("find linear tickets about the checkout timeout", "issueSearch"),
        ("linear.issues.search",),
        "lexical",
    ),
    _q(
        "spin up a new linear project for the Q3 database migration",
        ("set up a linear project with a lead and target date", "projectCreate"),
        ("linear.projects.create",),
        "paraphrase",
    ),
    # --- Notion
    _q(
        "query the notion tasks database for items due this week",
        ("filter a notion database by due date", "databases query filter"),
        ("notion.databases.query",),
        "lexical",
    ),
    _q(
        "add a paragraph to the bottom of my notion meeting notes",
        ("write more text at the end of a notion page", "append block children"),
        ("notion.blocks.children.append",),
        "paraphrase",
    ),
    _q(
        "read what's written on the Notion onboarding page",
        ("get the content of a notion page", "retrieve page"),
        ("notion.blocks.children.list",),
        "hard",
    ),
    _q(
        "find the notion page called Roadmap",
        ("look up a notion page by its title", "notion search"),
        ("notion.search",),
        "paraphrase",
    ),
    _q(
        "add a Priority column to the projects table in notion",
        ("add a property to a notion database", "update database schema"),
        ("notion.databases.update",),
        "hard",
    ),
    _q(
        "throw away the old draft page in notion",
        ("delete a notion page", "archive page"),
        ("notion.pages.update", "notion.blocks.delete"),
        "paraphrase",
    ),
    _q(
        "who has access to our notion workspace",
        ("list the people in the notion workspace", "users list"),
        ("notion.users.list",),
        "paraphrase",
    ),
    # --- Confluence
    _q(
        "create a confluence page in the ENG space for the API style guide",
        ("write a new wiki page in confluence", "create page"),
        ("confluence.pages.create",),
        "lexical",
    ),
    _q(
        "upload the architecture diagram PDF to the design doc in confluence",
        ("attach a file to a confluence page", "add attachment"),
        ("confluence.attachments.upload",),
        "lexical",
    ),
    _q(
        "find the runbook for database failover on our wiki",
        ("search the wiki for the failover runbook", "cql search text"),
        ("confluence.search", "notion.search"),
        "hard",
    ),
    _q(
        "what areas does our Confluence have",
        ("show every team's confluence area", "get spaces"),
        ("confluence.spaces.list",),
        "paraphrase",
    ),
    _q(
        "fix a typo in the confluence release notes page",
        ("edit the text of a confluence page", "update page body"),
        ("confluence.pages.update",),
        "paraphrase",
    ),
    _q(
        "what sits under the Engineering Handbook page in confluence",
        ("list the sub-pages of a confluence page", "get child pages"),
        ("confluence.pages.children.list",),
        "hard",
    ),
    # --- Zendesk
    _q(
        "merge these duplicate zendesk tickets",
        ("combine two support tickets about the same problem", "merge tickets"),
        ("zendesk.tickets.merge",),
        "lexical",
    ),
    _q(
        "reply to the customer on ticket 4512 and set it to pending",
        ("send a public response on a zendesk ticket", "update ticket comment status"),
        ("zendesk.tickets.update",),
        "paraphrase",
    ),
    _q(
        "how happy were customers with support last month",
        ("CSAT scores for the last 30 days", "list satisfaction ratings"),
        ("zendesk.satisfaction_ratings.list",),
        "hard",
    ),
    _q(
        "use the refund-request canned response on ticket 88",
        ("run a zendesk macro on a ticket", "apply macro"),
        ("zendesk.macros.apply",),
        "hard",
    ),
    _q(
        "read the whole back-and-forth on ticket 9931",
        ("show every message on a zendesk ticket", "list ticket comments"),
        ("zendesk.tickets.comments.list",),
        "paraphrase",
    ),
    _q(
        "search zendesk for open tickets from acme.com",
        ("find support tickets from one customer domain", "zendesk search query type:ticket"),
        ("zendesk.search",),
        "lexical",
    ),
    _q(
        "look up the customer jane@acme.com in our help desk",
        ("find a zendesk end user by email", "users search"),
        ("zendesk.users.search", "zendesk.search"),
        "paraphrase",
    ),
    # --- PagerDuty
    _q(
        "the site is down, wake up whoever is on call",
        ("page the on-call engineer now", "trigger incident"),
        (_PD + "incidents.create", _PD + "events.enqueue"),
        "hard",
    ),
    _q(
        "who is on call this weekend for payments",
        ("who holds the pager for the payments service Saturday and Sunday", "list oncalls"),
        (_PD + "oncalls.list",),
        "hard",
    ),
    _q(
        "I'm on it, stop paging me about the checkout alert",
        ("acknowledge the pagerduty incident", "incident acknowledge"),
        (_PD + "incidents.update", _PD + "incidents.snooze"),
        "hard",
    ),
    _q(
        "list triggered pagerduty incidents",
        ("which pagerduty incidents are still open", "get incidents status triggered"),
        (_PD + "incidents.list",),
        "lexical",
    ),
    _q(
        "cover Sam's on-call shift Friday night",
        ("take over someone's pagerduty shift", "schedule override"),
        (_PD + "schedules.overrides.create",),
        "hard",
    ),
    _q(
        "don't page anyone during tonight's database upgrade",
        ("silence pagerduty for the database service during maintenance", "maintenance window create"),
        (_PD + "maintenance_windows.create",),
        "paraphrase",
    ),
    _q(
        "who gets called if the primary on-call doesn't answer",
        ("the escalation chain for the api service", "get escalation policy"),
        (_PD + "escalation_policies.get", _PD + "escalation_policies.list"),
        "hard",
    ),
    _q(
        "add a note to the incident saying we rolled back",
        ("write an update on the pagerduty incident timeline", "incident notes create"),
        (_PD + "incidents.notes.create",),
        "lexical",
    ),
    # --- Sentry
    _q(
        "resolve the sentry issue for the KeyError in checkout",
        ("mark the sentry error as fixed", "update issue status resolved"),
        (_SENTRY + "issues.update",),
        "lexical",
    ),
    _q(
        "stop showing me that noisy error, it's expected",
        ("ignore a sentry issue", "mute issue"),
        (_SENTRY + "issues.update",),
        "paraphrase",
    ),
    _q(
        "show me the stack trace from the most recent time this crash happened",
        ("latest event of a sentry issue", "get latest event"),
        (_SENTRY + "issues.events.latest", _SENTRY + "issues.events.list"),
        "hard",
    ),
    _q(
        "what DSN should the new backend service use",
        ("the client key for a sentry project", "project keys list"),
        (_SENTRY + "projects.keys.list",),
        "hard",
    ),
    _q(
        "tell sentry we shipped v2.4.0 to production",
        ("record a deploy of a release in sentry", "create deploy"),
        (_SENTRY + "releases.deploys.create", _SENTRY + "releases.create"),
        "paraphrase",
    ),
    _q(
        "list unresolved errors in the checkout project",
        ("what's currently broken in checkout according to sentry", "list project issues"),
        (_SENTRY + "issues.list",),
        "lexical",
    ),
    _q(
        "frontend stack traces only show minified code",
        ("upload source maps for the web release", "release files upload"),
        (_SENTRY + "releases.files.upload",),
        "hard",
    ),
    # --- Datadog
    _q(
        "query the p99 latency metric for the api over the last hour",
        ("graph the api latency timeseries", "metrics query"),
        (_DD + "metrics.query",),
        "lexical",
    ),
    _q(
        "alert me when the api error rate goes above 5%",
        ("set up a datadog alert on error rate", "create monitor"),
        (_DD + "monitors.create",),
        "paraphrase",
    ),
    _q(
        "find log lines with 'timeout' from the payments service",
        ("search datadog logs for timeouts", "logs list query"),
        (_DD + "logs.search",),
        "lexical",
    ),
    _q(
        "mute the datadog alerts for db-1 while we patch it",
        ("silence monitors on a host for an hour", "schedule downtime"),
        (_DD + "downtimes.create",),
        "paraphrase",
    ),
    _q(
        "how many 500s per service in the last hour",
        ("count error responses grouped by service from logs", "logs aggregate count group by"),
        (_DD + "logs.aggregate",),
        "hard",
    ),
    _q(
        "list datadog dashboards",
        ("show me all our dashboards", "get dashboards"),
        (_DD + "dashboards.list",),
        "lexical",
    ),
    _q(
        "raise the CPU alert threshold to 90%",
        ("change a datadog monitor's critical threshold", "update monitor"),
        (_DD + "monitors.update",),
        "paraphrase",
    ),
    _q(
        "which metrics are hosts actually sending us",
        ("metrics reporting to datadog right now", "list active metrics"),
        (_DD + "metrics.list_active",),
        "paraphrase",
    ),
    _q(
        "put a marker on the graphs for today's deploy",
        ("post a deploy event to datadog", "events create"),
        (_DD + "events.create",),
        "hard",
    ),
    # --- Cloudflare
    _q(
        "add a CNAME record for docs.example.com",
        ("create a dns entry pointing docs to our host", "dns records create"),
        (_CF + "dns_records.create",),
        "lexical",
    ),
    _q(
        "clear the CDN cache after deploying the new CSS",
        ("make cloudflare fetch the new stylesheet", "purge cache"),
        (_CF + "zones.purge_cache",),
        "paraphrase",
    ),
    _q(
        "point blog.example.com at the new server 203.0.113.7",
        ("change the IP the blog subdomain resolves to", "update dns record"),
        (_CF + "dns_records.update", _CF + "dns_records.create"),
        "hard",
    ),
    _q(
        "we're getting DDoSed, turn on under attack mode",
        ("raise cloudflare security level for the site", "zone settings edit security_level"),
        (_CF + "zones.settings.edit",),
        "hard",
    ),
    _q(
        "block traffic from 198.51.100.23",
        ("stop an IP address from reaching our site", "create firewall rule block ip"),
        (_CF + "ip_access_rules.create", _CF + "firewall_rules.create"),
        "paraphrase",
    ),
    _q(
        "back up our domain's DNS as a zone file",
        ("download every dns record for the domain", "export dns records bind"),
        (_CF + "dns_records.export",),
        "paraphrase",
    ),
    _q(
        "which domains do we have on cloudflare",
        ("list our sites in cloudflare", "zones list"),
        (_CF + "zones.list",),
        "paraphrase",
    ),
)
