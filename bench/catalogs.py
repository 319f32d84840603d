"""Catalog generators shared by the discovery benches (not a bench itself).

- :func:`realistic_catalog`: about 160 hand-written operations across 17 apps (notes,
  calendar, files, email, a GitHub-like forge, desktop windows and a browser under
  ``apps``, contacts, Slack-like chat, to-dos, music, weather, maps, payments, smart
  home, spreadsheets, web), documented the way real APIs document themselves.
- :func:`generated_catalog`: a large, deterministic catalog (1,000 modules x 10
  operations by default) built from vocabularies with ``random.Random(seed)``.
- :func:`fastmcp_baseline`: FastMCP's BM25 index and its searchable-text extraction,
  or a clear message and exit status 2 when the ``bench`` extra is not installed.

Import it from a bench script (``bench/`` is on ``sys.path`` when one runs), e.g.
``.venv/bin/python bench/discovery.py``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from mycelium import Module, Operation, operation
from mycelium._operations import AccessLabel

__all__ = [
    "DOMAINS",
    "VENDORS",
    "FastMCPBaseline",
    "LabelledQuery",
    "fastmcp_baseline",
    "fastmcp_tool_name",
    "generated_catalog",
    "operation_count",
    "plural",
    "realistic_catalog",
]


@dataclass(frozen=True)
class LabelledQuery:
    """One labelled need: what a model types first, the phrasings it would add, and the paths that satisfy it."""

    text: str
    alternates: tuple[str, ...]
    acceptable: tuple[str, ...]
    kind: Literal["own", "lexical", "paraphrase", "hard"]


def _noop() -> None:
    return None


def operation_count(modules: Sequence[Module]) -> int:
    """How many operations the modules hold (child modules included)."""
    total = 0
    for module in modules:
        for value in module.operations.values():
            total += operation_count([value]) if isinstance(value, Module) else 1
    return total


# --------------------------------------------------------------------------------------
# The realistic catalog
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Param:
    name: str
    type: Any
    description: str
    default: Any = ...


@dataclass(frozen=True)
class _Spec:
    description: str
    params: tuple[_Param, ...]
    access: AccessLabel
    confirm: bool


def p(name: str, type_: Any, description: str, default: Any = ...) -> _Param:
    """One input field: its name, type, description and (if optional) default."""
    return _Param(name, type_, description, default)


def read(description: str, *params: _Param) -> _Spec:
    return _Spec(description, params, "read", False)


def write(description: str, *params: _Param, confirm: bool = False) -> _Spec:
    return _Spec(description, params, "write", confirm)


def _model_name(module: str, key: str) -> str:
    parts = [module, *key.replace(".", "_").split("_")]
    return "".join(part[:1].upper() + part[1:] for part in parts if part) + "Input"


def _app(name: str, description: str, specs: dict[str, _Spec], *, namespace: Sequence[str] = ()) -> Module:
    operations: dict[str, Operation | Module] = {}
    for key, spec in specs.items():
        fields: dict[str, Any] = {
            param.name: (param.type, Field(param.default, description=param.description)) for param in spec.params
        }
        model = create_model(_model_name(name, key), **fields)
        operations[key] = operation(
            input=model,
            execute=_noop,
            access=spec.access,
            confirm=spec.confirm,
            description=spec.description,
        )
    return Module(
        id=f"bench.{'.'.join((*namespace, name))}",
        name=name,
        namespace=list(namespace),
        description=description,
        operations=operations,
    )


class Attendee(BaseModel):
    email: str = Field(description="The attendee's email address.")
    optional: bool = Field(False, description="Whether this is an optional attendee.")


class LineItem(BaseModel):
    description: str = Field(description="What is being billed.")
    quantity: float = Field(1, description="Number of units.")
    unit_amount: int = Field(description="Price per unit in the smallest currency unit (cents).")


_LIMIT = p("limit", int, "Maximum number of results to return.", 20)
_CURSOR = p("cursor", str | None, "Opaque pagination cursor returned by a previous call.", None)
_OWNER = p("owner", str, "The account owner of the repository. The name is not case sensitive.")
_REPO = p("repo", str, "The name of the repository without the .git extension. The name is not case sensitive.")
_ISSUE_NUMBER = p("issue_number", int, "The number that identifies the issue.")
_PULL_NUMBER = p("pull_number", int, "The number that identifies the pull request.")
_LOCATION = p("location", str, "City name, street address, or 'lat,lon' coordinates.")
_UNITS = p("units", Literal["metric", "imperial"], "Unit system for temperatures and speeds.", "metric")
_WINDOW_ID = p("window_id", int, "The window's identifier, as returned by windows.list.")
_CHANNEL = p("channel", str, "Conversation ID or channel name such as #general.")


def _notes() -> Module:
    note_id = p("note_id", str, "The note's unique identifier.")
    return _app(
        "notes",
        "A Markdown notebook organised in folders.",
        {
            "notes.create": write(
                "Create a note with a title and Markdown body.",
                p("title", str, "Title of the note."),
                p("body", str, "Note content in Markdown.", ""),
                p("folder_id", str | None, "Folder to create the note in; defaults to the root folder.", None),
                p("tags", list[str], "Tags to attach to the note.", []),
            ),
            "notes.get": read("Get a note by ID, including its full body.", note_id),
            "notes.update": write(
                "Update the title or body of an existing note.",
                note_id,
                p("title", str | None, "New title; unchanged when omitted.", None),
                p("body", str | None, "New Markdown body; replaces the whole body.", None),
            ),
            "notes.append": write(
                "Append text to the end of an existing note.",
                note_id,
                p("text", str, "Markdown to append; a newline is inserted before it."),
            ),
            "notes.delete": write("Delete a note permanently.", note_id, confirm=True),
            "notes.search": read(
                "Full-text search across note titles and bodies.",
                p("query", str, "Words or phrase to search for."),
                p("folder_id", str | None, "Restrict the search to one folder.", None),
                _LIMIT,
            ),
            "notes.list": read(
                "List notes in a folder, most recently edited first.",
                p("folder_id", str | None, "Folder to list; the root folder when omitted.", None),
                _LIMIT,
                _CURSOR,
            ),
            "folders.list": read(
                "List the folders in the notebook.",
                p("parent_id", str | None, "List only the children of this folder.", None),
            ),
            "folders.create": write(
                "Create a folder for organizing notes.",
                p("name", str, "Folder name."),
                p("parent_id", str | None, "Parent folder; the root when omitted.", None),
            ),
            "tags.add": write(
                "Add tags to a note.",
                note_id,
                p("tags", list[str], "Tags to add; existing tags are kept."),
            ),
        },
    )


def _calendar() -> Module:
    event_id = p("event_id", str, "Event identifier.")
    calendar_id = p("calendar_id", str, "Calendar identifier. Use 'primary' for the user's main calendar.", "primary")
    notify = p("send_updates", bool, "Whether to send notifications about the change to attendees.", True)
    return _app(
        "calendar",
        "The user's calendars and events.",
        {
            "events.list": read(
                "Returns events on the specified calendar between two times, ordered by start time.",
                calendar_id,
                p("time_min", datetime | None, "Lower bound (exclusive) for an event's end time.", None),
                p("time_max", datetime | None, "Upper bound (exclusive) for an event's start time.", None),
                p("q", str | None, "Free text search terms to find events that match in any field.", None),
                p("max_results", int, "Maximum number of events returned.", 50),
            ),
            "events.get": read("Returns an event based on its calendar ID and event ID.", calendar_id, event_id),
            "events.create": write(
                "Creates an event.",
                calendar_id,
                p("summary", str, "Title of the event."),
                p("start", datetime, "The (inclusive) start time of the event."),
                p("end", datetime, "The (exclusive) end time of the event."),
                p("attendees", list[Attendee], "The attendees of the event.", []),
                p("location", str | None, "Geographic location of the event as free-form text.", None),
                p("description", str | None, "Description of the event. Can contain HTML.", None),
                p("recurrence", list[str], "RRULE lines for a recurring event, as specified in RFC 5545.", []),
            ),
            "events.quick_add": write(
                "Creates an event based on a simple text string.",
                calendar_id,
                p("text", str, "The text describing the event to be created."),
            ),
            "events.update": write(
                "Updates an event's time, title, location or attendees.",
                calendar_id,
                event_id,
                p("summary", str | None, "New title of the event.", None),
                p("start", datetime | None, "New start time.", None),
                p("end", datetime | None, "New end time.", None),
                p("location", str | None, "New location.", None),
                p("attendees", list[Attendee] | None, "Replaces the attendee list.", None),
                notify,
            ),
            "events.delete": write("Deletes an event.", calendar_id, event_id, notify, confirm=True),
            "events.respond": write(
                "Sets the current user's response status for an event they are invited to.",
                calendar_id,
                event_id,
                p("response", Literal["accepted", "declined", "tentative"], "The attendee's response status."),
                p("comment", str | None, "The attendee's response comment.", None),
            ),
            "calendars.list": read("Returns the calendars on the user's calendar list."),
            "freebusy.query": read(
                "Returns free/busy information for a set of calendars.",
                p("items", list[str], "List of calendars and/or groups to query, by ID or email address."),
                p("time_min", datetime, "The start of the interval for the query."),
                p("time_max", datetime, "The end of the interval for the query."),
            ),
        },
    )


def _files() -> Module:
    file_id = p("file_id", str, "The ID of the file.")
    return _app(
        "files",
        "Cloud drive: files and folders.",
        {
            "files.list": read(
                "Lists the files and folders in a folder.",
                p("folder_id", str, "The folder to list; 'root' for the top of the drive.", "root"),
                p("order_by", Literal["name", "modifiedTime", "size"], "Sort key.", "name"),
                p("page_size", int, "The maximum number of files to return per page.", 100),
                _CURSOR,
            ),
            "files.search": read(
                "Searches for files by name, full text or type.",
                p("query", str, "Text matched against file names and contents."),
                p("mime_type", str | None, "Only return files of this MIME type.", None),
                p("modified_after", datetime | None, "Only return files modified after this time.", None),
                p("page_size", int, "The maximum number of files to return.", 25),
            ),
            "files.read": read(
                "Downloads a file's content as text.",
                file_id,
                p("encoding", str, "Text encoding used to decode the content.", "utf-8"),
            ),
            "files.upload": write(
                "Creates a new file, or replaces the content of an existing one.",
                p("name", str, "The name of the file, including its extension."),
                p("content", str, "The file content."),
                p("folder_id", str, "The folder to create the file in.", "root"),
                p("overwrite", bool, "Replace a file with the same name instead of failing.", False),
            ),
            "files.move": write(
                "Moves or renames a file.",
                file_id,
                p("destination_folder_id", str | None, "The folder to move the file into.", None),
                p("new_name", str | None, "The new name of the file.", None),
            ),
            "files.copy": write(
                "Creates a copy of a file.",
                file_id,
                p("destination_folder_id", str | None, "The folder for the copy; the same folder when omitted.", None),
                p("name", str | None, "The name of the copy.", None),
            ),
            "files.delete": write("Moves a file to the trash.", file_id),
            "files.share": write(
                "Grants people access to a file.",
                file_id,
                p("emails", list[str], "Email addresses of the users or groups to grant access to."),
                p("role", Literal["reader", "commenter", "writer"], "The role granted by this permission."),
                p("message", str | None, "A plain text custom message to include in the notification email.", None),
                confirm=True,
            ),
            "files.metadata": read(
                "Gets a file's metadata: size, owner, MIME type, and created and modified times.", file_id
            ),
            "folders.create": write(
                "Creates a folder.",
                p("name", str, "The name of the folder."),
                p("parent_id", str, "The parent folder.", "root"),
            ),
            "trash.restore": write("Restores a file from the trash.", file_id),
        },
    )


def _email() -> Module:
    message_id = p("message_id", str, "The ID of the message.")
    recipients = p("to", list[str], "Recipient email addresses.")
    return _app(
        "email",
        "The user's mailbox.",
        {
            "messages.search": read(
                "Lists the messages in the user's mailbox that match a query.",
                p(
                    "q",
                    str,
                    "Only return messages matching the query. Supports the same format as the mailbox search box, "
                    "for example from:someone@example.com subject:invoice after:2024/01/01.",
                ),
                p("max_results", int, "Maximum number of messages to return.", 20),
                p("include_spam_trash", bool, "Include messages from SPAM and TRASH in the results.", False),
            ),
            "messages.get": read(
                "Gets the specified message: headers, body and the list of attachments.",
                message_id,
                p("format", Literal["full", "metadata", "minimal"], "The format to return the message in.", "full"),
            ),
            "messages.send": write(
                "Sends a message to the recipients in the To, Cc, and Bcc headers.",
                recipients,
                p("subject", str, "Subject line."),
                p("body", str, "Plain text body."),
                p("cc", list[str], "Cc recipients.", []),
                p("bcc", list[str], "Bcc recipients.", []),
                p("attachment_file_ids", list[str], "IDs of drive files to attach.", []),
                confirm=True,
            ),
            "messages.reply": write(
                "Sends a reply to a message in the same thread.",
                message_id,
                p("body", str, "Plain text body of the reply."),
                p("reply_all", bool, "Reply to every recipient of the original message.", False),
                confirm=True,
            ),
            "messages.forward": write(
                "Forwards a message, with its attachments, to new recipients.",
                message_id,
                recipients,
                p("note", str | None, "Text added above the forwarded message.", None),
                confirm=True,
            ),
            "messages.archive": write("Removes a message from the inbox without deleting it.", message_id),
            "messages.trash": write("Moves the specified message to the trash.", message_id),
            "messages.mark_read": write(
                "Marks messages as read or unread.",
                p("message_ids", list[str], "The IDs of the messages to modify."),
                p("read", bool, "True to mark as read, false to mark as unread.", True),
            ),
            "drafts.create": write(
                "Creates a new draft.",
                recipients,
                p("subject", str, "Subject line."),
                p("body", str, "Plain text body."),
            ),
            "labels.list": read("Lists all labels in the user's mailbox."),
            "labels.apply": write(
                "Adds a label to messages.",
                p("message_ids", list[str], "The IDs of the messages to label."),
                p("label", str, "Label name or ID."),
            ),
            "attachments.get": read(
                "Gets the specified message attachment.",
                message_id,
                p("attachment_id", str, "The ID of the attachment."),
            ),
            "threads.get": read(
                "Gets the specified thread with all of its messages.",
                p("thread_id", str, "The ID of the thread."),
            ),
        },
    )


def _github() -> Module:
    state = p("state", Literal["open", "closed", "all"], "Indicates the state to return.", "open")
    return _app(
        "github",
        "A GitHub-like code forge: repositories, issues, pull requests and CI.",
        {
            "repos.list": read(
                "Lists repositories that the authenticated user has explicit permission to access.",
                p("org", str | None, "List the repositories of this organization instead.", None),
                p("visibility", Literal["all", "public", "private"], "Limit results to this visibility.", "all"),
                p("sort", Literal["created", "updated", "pushed", "full_name"], "The property to sort by.", "pushed"),
            ),
            "repos.get": read("Gets a repository.", _OWNER, _REPO),
            "repos.create": write(
                "Creates a new repository for the authenticated user.",
                p("name", str, "The name of the repository."),
                p("description", str | None, "A short description of the repository.", None),
                p("private", bool, "Whether the repository is private.", False),
                p("auto_init", bool, "Whether the repository is initialized with a minimal README.", False),
            ),
            "repos.contents.get": read(
                "Gets the contents of a file or directory in a repository.",
                _OWNER,
                _REPO,
                p("path", str, "Path of the file or directory."),
                p("ref", str | None, "The name of the commit/branch/tag. Default: the default branch.", None),
            ),
            "repos.branches.list": read("Lists branches.", _OWNER, _REPO),
            "repos.commits.list": read(
                "Lists commits, newest first.",
                _OWNER,
                _REPO,
                p("sha", str | None, "SHA or branch to start listing commits from.", None),
                p("path", str | None, "Only commits containing this file path will be returned.", None),
                p("author", str | None, "GitHub username or email address to use to filter by commit author.", None),
                p("since", datetime | None, "Only commits after this date will be returned.", None),
            ),
            "repos.issues.list": read(
                "Lists issues in a repository. Pull requests are not included.",
                _OWNER,
                _REPO,
                state,
                p("labels", list[str], "Only issues with all of these labels.", []),
                p("assignee", str | None, "Only issues assigned to this user.", None),
            ),
            "repos.issues.get": read("Gets an issue.", _OWNER, _REPO, _ISSUE_NUMBER),
            "repos.issues.create": write(
                "Creates an issue.",
                _OWNER,
                _REPO,
                p("title", str, "The title of the issue."),
                p("body", str | None, "The contents of the issue.", None),
                p("labels", list[str], "Labels to associate with this issue.", []),
                p("assignees", list[str], "Logins for users to assign to this issue.", []),
            ),
            "repos.issues.update": write(
                "Updates an issue's title, body, state, labels or assignees.",
                _OWNER,
                _REPO,
                _ISSUE_NUMBER,
                p("title", str | None, "The title of the issue.", None),
                p("body", str | None, "The contents of the issue.", None),
                p("state", Literal["open", "closed"] | None, "The open or closed state of the issue.", None),
                p(
                    "state_reason",
                    Literal["completed", "not_planned", "reopened"] | None,
                    "The reason for the state change.",
                    None,
                ),
                p("labels", list[str] | None, "Replaces the labels of the issue.", None),
            ),
            "repos.issues.comments.create": write(
                "Creates a comment on an issue or pull request.",
                _OWNER,
                _REPO,
                _ISSUE_NUMBER,
                p("body", str, "The contents of the comment."),
            ),
            "repos.pulls.list": read(
                "Lists pull requests.",
                _OWNER,
                _REPO,
                state,
                p("head", str | None, "Filter pulls by head user or head organization and branch name.", None),
                p("base", str | None, "Filter pulls by base branch name.", None),
            ),
            "repos.pulls.get": read(
                "Gets a pull request, including whether it can be merged.", _OWNER, _REPO, _PULL_NUMBER
            ),
            "repos.pulls.create": write(
                "Creates a pull request.",
                _OWNER,
                _REPO,
                p("title", str, "The title of the new pull request."),
                p("head", str, "The name of the branch where your changes are implemented."),
                p("base", str, "The name of the branch you want the changes pulled into."),
                p("body", str | None, "The contents of the pull request.", None),
                p("draft", bool, "Indicates whether the pull request is a draft.", False),
            ),
            "repos.pulls.merge": write(
                "Merges a pull request into the base branch.",
                _OWNER,
                _REPO,
                _PULL_NUMBER,
                p("merge_method", Literal["merge", "squash", "rebase"], "The merge method to use.", "merge"),
                p("commit_title", str | None, "Title for the automatic commit message.", None),
                confirm=True,
            ),
            "repos.pulls.reviews.create": write(
                "Creates a review on a pull request.",
                _OWNER,
                _REPO,
                _PULL_NUMBER,
                p("event", Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"], "The review action you want to perform."),
                p("body", str | None, "The body text of the review.", None),
            ),
            "repos.pulls.files.list": read("Lists the files in a pull request.", _OWNER, _REPO, _PULL_NUMBER),
            "repos.releases.create": write(
                "Creates a release.",
                _OWNER,
                _REPO,
                p("tag_name", str, "The name of the tag."),
                p("name", str | None, "The name of the release.", None),
                p("body", str | None, "Text describing the contents of the tag.", None),
                p("draft", bool, "True to create a draft (unpublished) release.", False),
                p("prerelease", bool, "True to identify the release as a prerelease.", False),
                confirm=True,
            ),
            "actions.runs.list": read(
                "Lists workflow runs for a repository.",
                _OWNER,
                _REPO,
                p("branch", str | None, "Returns workflow runs associated with a branch.", None),
                p(
                    "status",
                    Literal["queued", "in_progress", "completed", "success", "failure"] | None,
                    "Returns workflow runs with the check run status or conclusion.",
                    None,
                ),
            ),
            "actions.runs.rerun": write(
                "Re-runs a workflow run.",
                _OWNER,
                _REPO,
                p("run_id", int, "The unique identifier of the workflow run."),
            ),
            "search.code": read(
                "Searches for query terms inside of files across repositories.",
                p("q", str, "The query, with optional qualifiers such as repo:, language: and path:."),
                _LIMIT,
            ),
        },
    )


def _desktop() -> Module:
    return _app(
        "desktop",
        "The user's desktop: windows, applications, clipboard and screen.",
        {
            "windows.list": read("Lists open windows with their titles, owning application and bounds."),
            "windows.focus": write("Brings a window to the front and gives it keyboard focus.", _WINDOW_ID),
            "windows.close": write(
                "Closes a window.",
                _WINDOW_ID,
                p("force", bool, "Close without asking the application to save.", False),
            ),
            "windows.minimize": write("Minimizes a window to the dock.", _WINDOW_ID),
            "windows.set_bounds": write(
                "Moves or resizes a window.",
                _WINDOW_ID,
                p("x", int | None, "Left edge in screen points.", None),
                p("y", int | None, "Top edge in screen points.", None),
                p("width", int | None, "Width in screen points.", None),
                p("height", int | None, "Height in screen points.", None),
            ),
            "windows.tile": write(
                "Arranges windows next to each other on the current display.",
                p("window_ids", list[int], "Windows to arrange, in order."),
                p("layout", Literal["columns", "rows", "grid"], "How to arrange them.", "columns"),
            ),
            "applications.launch": write(
                "Launches an application by name or bundle identifier.",
                p("name", str, "Application name or bundle identifier."),
                p("arguments", list[str], "Command-line arguments.", []),
            ),
            "applications.quit": write(
                "Quits a running application.",
                p("name", str, "Application name or bundle identifier."),
                p("force", bool, "Terminate immediately instead of asking it to quit.", False),
                confirm=True,
            ),
            "applications.list_running": read("Lists the applications that are currently running."),
            "clipboard.read": read("Returns the text currently on the clipboard."),
            "clipboard.write": write("Replaces the clipboard contents with text.", p("text", str, "The text to copy.")),
            "screen.capture": read(
                "Captures the screen, or a single window, as a PNG image.",
                p("window_id", int | None, "Capture only this window.", None),
                p("display", int, "Display index for a full-screen capture.", 0),
            ),
        },
        namespace=["apps"],
    )


def _browser() -> Module:
    tab_id = p("tab_id", int, "The tab's identifier.")
    return _app(
        "browser",
        "The web browser: tabs, bookmarks and history.",
        {
            "tabs.list": read("Lists open tabs with their titles and URLs."),
            "tabs.open": write(
                "Opens a URL in a new tab.",
                p("url", str, "The URL to open."),
                p("background", bool, "Open without switching to the tab.", False),
            ),
            "tabs.close": write("Closes a tab.", tab_id),
            "bookmarks.create": write(
                "Creates a bookmark.",
                p("url", str, "The URL to bookmark."),
                p("title", str | None, "Bookmark title; the page title when omitted.", None),
            ),
            "history.search": read(
                "Searches the browsing history for pages whose title or URL matches.",
                p("text", str, "Text to match against titles and URLs."),
                p("start_time", datetime | None, "Only pages visited after this time.", None),
                _LIMIT,
            ),
        },
        namespace=["apps"],
    )


def _contacts() -> Module:
    contact_id = p("contact_id", str, "The resource name of the contact.")
    return _app(
        "contacts",
        "The user's address book.",
        {
            "people.search": read(
                "Searches contacts by name, email address, phone number or organization.",
                p("query", str, "The plain-text query; matches prefixes of names, emails and phone numbers."),
                _LIMIT,
            ),
            "people.get": read("Gets a contact by resource name.", contact_id),
            "people.create": write(
                "Creates a new contact.",
                p("given_name", str, "First name."),
                p("family_name", str | None, "Last name.", None),
                p("emails", list[str], "Email addresses.", []),
                p("phone_numbers", list[str], "Phone numbers in any format.", []),
                p("organization", str | None, "Company or organization.", None),
                p("notes", str | None, "Free-form notes.", None),
            ),
            "people.update": write(
                "Updates fields of an existing contact.",
                contact_id,
                p("emails", list[str] | None, "Replaces the email addresses.", None),
                p("phone_numbers", list[str] | None, "Replaces the phone numbers.", None),
                p("organization", str | None, "Company or organization.", None),
                p("birthday", date | None, "Date of birth.", None),
            ),
            "people.delete": write("Deletes a contact.", contact_id, confirm=True),
            "groups.list": read("Lists the user's contact groups."),
            "groups.add_members": write(
                "Adds contacts to a contact group.",
                p("group_id", str, "The resource name of the contact group."),
                p("contact_ids", list[str], "The contacts to add."),
            ),
        },
    )


def _slack() -> Module:
    ts = p("ts", str, "Timestamp of the message.")
    return _app(
        "slack",
        "Team chat: channels, direct messages, threads.",
        {
            "conversations.list": read(
                "Lists channels and direct-message conversations the user is a member of.",
                p("types", list[str], "Mix of public_channel, private_channel, mpim, im.", ["public_channel"]),
                p("exclude_archived", bool, "Set to true to exclude archived channels from the list.", True),
            ),
            "conversations.history": read(
                "Fetches a conversation's history of messages and events.",
                _CHANNEL,
                p("oldest", datetime | None, "Only messages after this time.", None),
                p("latest", datetime | None, "Only messages before this time.", None),
                _LIMIT,
            ),
            "conversations.replies": read("Retrieves a thread of messages posted to a conversation.", _CHANNEL, ts),
            "conversations.join": write("Joins an existing conversation.", _CHANNEL),
            "conversations.open": write(
                "Opens or resumes a direct message or multi-person direct message.",
                p("users", list[str], "User IDs or emails; one for a 1:1 DM, up to eight for a group DM."),
            ),
            "chat.post_message": write(
                "Sends a message to a channel.",
                _CHANNEL,
                p("text", str, "The formatted text of the message."),
                p("thread_ts", str | None, "Provide another message's ts value to make this message a reply.", None),
            ),
            "chat.update": write("Updates a message.", _CHANNEL, ts, p("text", str, "New text for the message.")),
            "chat.delete": write("Deletes a message.", _CHANNEL, ts, confirm=True),
            "chat.schedule_message": write(
                "Schedules a message to be sent to a channel.",
                _CHANNEL,
                p("text", str, "The formatted text of the message."),
                p("post_at", datetime, "When the message should be posted."),
            ),
            "reactions.add": write(
                "Adds a reaction to an item.",
                _CHANNEL,
                ts,
                p("name", str, "Reaction (emoji) name, such as thumbsup."),
            ),
            "search.messages": read(
                "Searches for messages matching a query.",
                p("query", str, "Search query; supports in:#channel and from:@user modifiers."),
                p("sort", Literal["score", "timestamp"], "Return matches sorted by score or timestamp.", "score"),
                _LIMIT,
            ),
            "users.lookup_by_email": read(
                "Find a user with an email address.", p("email", str, "An email address belonging to a user.")
            ),
            "users.profile.set": write(
                "Set the profile information for a user.",
                p("status_text", str, "The displayed text of up to 100 characters."),
                p("status_emoji", str | None, "The displayed emoji, such as :train:.", None),
                p("status_expiration", datetime | None, "When the status should be cleared.", None),
            ),
        },
    )


def _todo() -> Module:
    task_id = p("task_id", str, "Task identifier.")
    list_id = p("tasklist", str, "Task list identifier.", "@default")
    return _app(
        "todo",
        "To-do lists and tasks.",
        {
            "tasks.list": read(
                "Returns all tasks in the specified task list.",
                list_id,
                p("show_completed", bool, "Whether completed tasks are returned.", False),
                p("due_max", datetime | None, "Upper bound for a task's due date to filter by.", None),
            ),
            "tasks.create": write(
                "Creates a new task on the specified task list.",
                list_id,
                p("title", str, "Title of the task."),
                p("notes", str | None, "Notes describing the task.", None),
                p("due", date | None, "Due date of the task.", None),
                p("priority", Literal["low", "normal", "high"], "Priority of the task.", "normal"),
            ),
            "tasks.update": write(
                "Updates the specified task.",
                list_id,
                task_id,
                p("title", str | None, "Title of the task.", None),
                p("notes", str | None, "Notes describing the task.", None),
                p("due", date | None, "Due date of the task.", None),
                p("priority", Literal["low", "normal", "high"] | None, "Priority of the task.", None),
            ),
            "tasks.complete": write("Marks the specified task as completed.", list_id, task_id),
            "tasks.delete": write("Deletes the specified task from the task list.", list_id, task_id),
            "tasks.move": write(
                "Moves the specified task to another position in the task list or to another list.",
                list_id,
                task_id,
                p("parent", str | None, "New parent task identifier.", None),
                p("destination_tasklist", str | None, "Destination task list identifier.", None),
            ),
            "lists.list": read("Returns all the authenticated user's task lists."),
            "lists.create": write("Creates a new task list.", p("title", str, "Title of the task list.")),
        },
    )


def _music() -> Module:
    return _app(
        "music",
        "Music streaming: playback, search, playlists and library.",
        {
            "player.play": write(
                "Start a new context or resume current playback on the user's active device.",
                p("uri", str | None, "Spotify-style URI of the album, artist, playlist or track to play.", None),
                p("device_id", str | None, "The device to target; the active device when omitted.", None),
            ),
            "player.pause": write("Pause playback on the user's account."),
            "player.next": write("Skips to next track in the user's queue."),
            "player.previous": write("Skips to previous track in the user's queue."),
            "player.set_volume": write(
                "Set the volume for the user's current playback device.",
                p("volume_percent", int, "The volume to set. Must be a value from 0 to 100 inclusive."),
            ),
            "player.current": read("Get the object currently being played on the user's account."),
            "player.shuffle": write(
                "Toggle shuffle on or off for user's playback.", p("state", bool, "true: shuffle; false: do not.")
            ),
            "queue.add": write(
                "Add an item to the end of the user's current playback queue.",
                p("uri", str, "The URI of the item to add to the queue."),
            ),
            "catalog.search": read(
                "Get catalog information about albums, artists, playlists or tracks that match a keyword string.",
                p("q", str, "Your search query."),
                p("type", list[Literal["album", "artist", "playlist", "track"]], "Item types to search across."),
                _LIMIT,
            ),
            "playlists.list": read("Get a list of the playlists owned or followed by the current user."),
            "playlists.create": write(
                "Create a playlist for the current user.",
                p("name", str, "The name for the new playlist."),
                p("description", str | None, "Value for playlist description.", None),
                p("public", bool, "Whether the playlist is public.", False),
            ),
            "playlists.add_items": write(
                "Add one or more items to a user's playlist.",
                p("playlist_id", str, "The ID of the playlist."),
                p("uris", list[str], "Track or episode URIs to add."),
            ),
            "library.save_tracks": write(
                "Save one or more tracks to the current user's 'Your Music' library.",
                p("ids", list[str], "Track IDs."),
            ),
        },
    )


def _weather() -> Module:
    return _app(
        "weather",
        "Weather observations and forecasts.",
        {
            "current": read(
                "Current conditions for a location: temperature, wind, humidity and precipitation.",
                _LOCATION,
                _UNITS,
            ),
            "forecast.daily": read(
                "Daily forecast for up to 16 days.",
                _LOCATION,
                p("days", int, "Number of days to return, 1 to 16.", 7),
                _UNITS,
            ),
            "forecast.hourly": read(
                "Hourly forecast for the next 48 hours.",
                _LOCATION,
                p("hours", int, "Number of hours to return, 1 to 48.", 24),
                _UNITS,
            ),
            "alerts.list": read("Active severe weather alerts issued for a location.", _LOCATION),
            "air_quality.current": read(
                "Current air quality index and pollutant concentrations (PM2.5, PM10, O3, NO2).", _LOCATION
            ),
            "history.daily": read(
                "Observed daily weather for a past date.",
                _LOCATION,
                p("date", date, "The date to look up."),
                _UNITS,
            ),
        },
    )


def _maps() -> Module:
    mode = p("mode", Literal["driving", "walking", "bicycling", "transit"], "Travel mode.", "driving")
    return _app(
        "maps",
        "Places, directions and geocoding.",
        {
            "places.search": read(
                "Text search for places, optionally biased to a location.",
                p("query", str, "The text string on which to search, for example 'restaurant' or 'pizza in Rome'."),
                p("location", str | None, "Bias results towards this 'lat,lng'.", None),
                p("radius_m", int | None, "Bias radius in meters.", None),
                p("open_now", bool, "Return only places open for business at the time of the query.", False),
            ),
            "places.nearby": read(
                "Searches for places of a given type within a specified area.",
                p("location", str, "The 'lat,lng' around which to retrieve place information."),
                p("type", str, "Restricts the results to places matching the specified type, e.g. 'pharmacy'."),
                p("radius_m", int, "The distance in meters within which to return place results.", 1000),
            ),
            "places.details": read(
                "Returns details about a place: address, phone number, opening hours, rating and reviews.",
                p("place_id", str, "A textual identifier that uniquely identifies a place."),
            ),
            "directions.route": read(
                "Calculates directions between locations.",
                p("origin", str, "The address, place ID or 'lat,lng' from which to calculate directions."),
                p("destination", str, "The address, place ID or 'lat,lng' to which to calculate directions."),
                mode,
                p("departure_time", datetime | None, "Desired time of departure.", None),
                p("waypoints", list[str], "Locations to pass through along the route.", []),
            ),
            "distance_matrix": read(
                "Travel distance and time for a matrix of origins and destinations.",
                p("origins", list[str], "Starting points."),
                p("destinations", list[str], "Finishing points."),
                mode,
            ),
            "geocode": read(
                "Converts an address into geographic coordinates.", p("address", str, "The street address to geocode.")
            ),
            "reverse_geocode": read(
                "Converts geographic coordinates into a human-readable address.",
                p("lat", float, "Latitude."),
                p("lng", float, "Longitude."),
            ),
        },
    )


def _payments() -> Module:
    amount = p("amount", int, "Amount in the smallest currency unit (for example 100 cents to charge $1.00).")
    currency = p("currency", str, "Three-letter ISO currency code, in lowercase.", "usd")
    return _app(
        "payments",
        "Balance, transfers, invoices and refunds.",
        {
            "balance.get": read("Retrieves the current account balance, by currency."),
            "transfers.create": write(
                "Sends money from the account balance to a recipient.",
                p("recipient", str, "Email address, phone number or handle of the recipient."),
                amount,
                currency,
                p("note", str | None, "A note shown to the recipient.", None),
                confirm=True,
            ),
            "payment_requests.create": write(
                "Requests a payment from someone.",
                p("payer", str, "Email address, phone number or handle of the person to request money from."),
                amount,
                currency,
                p("note", str | None, "What the payment is for.", None),
            ),
            "transactions.list": read(
                "Returns a list of transactions, newest first.",
                p("created_after", datetime | None, "Only transactions created after this time.", None),
                p("created_before", datetime | None, "Only transactions created before this time.", None),
                p("counterparty", str | None, "Only transactions with this counterparty.", None),
                _LIMIT,
            ),
            "invoices.create": write(
                "Creates a draft invoice for a customer.",
                p("customer_id", str, "The ID of the customer who will be billed."),
                p("line_items", list[LineItem], "The individual line items that make up the invoice."),
                p("due_date", date | None, "The date on which payment for this invoice is due.", None),
                currency,
            ),
            "invoices.send": write(
                "Finalizes an invoice and emails it to the customer.",
                p("invoice_id", str, "The ID of the invoice."),
                confirm=True,
            ),
            "invoices.list": read(
                "Returns a list of invoices.",
                p("status", Literal["draft", "open", "paid", "void"] | None, "The status of the invoice.", None),
                p("customer_id", str | None, "Only return invoices for this customer.", None),
                _LIMIT,
            ),
            "refunds.create": write(
                "Refunds a charge that has previously been created, in full or in part.",
                p("charge_id", str, "The identifier of the charge to refund."),
                p("amount", int | None, "A positive integer representing how much of this charge to refund.", None),
                p(
                    "reason",
                    Literal["duplicate", "fraudulent", "requested_by_customer"] | None,
                    "String indicating the reason for the refund.",
                    None,
                ),
                confirm=True,
            ),
            "customers.create": write(
                "Creates a new customer object.",
                p("name", str, "The customer's full name or business name."),
                p("email", str | None, "Customer's email address.", None),
            ),
            "subscriptions.cancel": write(
                "Cancels a customer's subscription.",
                p("subscription_id", str, "The ID of the subscription."),
                p("at_period_end", bool, "Cancel at the end of the current billing period instead of now.", True),
                confirm=True,
            ),
        },
    )


def _home() -> Module:
    device_id = p("device_id", str, "The device's identifier.")
    return _app(
        "home",
        "Smart home devices.",
        {
            "devices.list": read("Lists devices with their room and current state."),
            "lights.set": write(
                "Sets the state of one light or every light in a room.",
                p("target", str, "A light's device ID or a room name."),
                p("on", bool | None, "Turn on or off.", None),
                p("brightness", int | None, "Brightness in percent, 1 to 100.", None),
                p("color", str | None, "Color name or hex code.", None),
            ),
            "thermostat.set": write(
                "Sets a thermostat's mode and target temperature.",
                device_id,
                p("target_temperature", float, "Target temperature in the thermostat's unit."),
                p("mode", Literal["heat", "cool", "auto", "off"] | None, "Operating mode.", None),
            ),
            "locks.lock": write("Locks a door lock.", device_id),
            "locks.unlock": write("Unlocks a door lock.", device_id, confirm=True),
            "scenes.activate": write("Activates a scene.", p("scene_id", str, "The scene's identifier.")),
            "cameras.snapshot": read("Returns a still image from a camera.", device_id),
        },
    )


def _sheets() -> Module:
    spreadsheet_id = p("spreadsheet_id", str, "The ID of the spreadsheet.")
    range_ = p("range", str, "The A1 notation of the range, such as Sheet1!A1:D10.")
    return _app(
        "sheets",
        "Spreadsheets.",
        {
            "spreadsheets.create": write("Creates a spreadsheet.", p("title", str, "The title of the spreadsheet.")),
            "values.get": read("Returns a range of values from a spreadsheet.", spreadsheet_id, range_),
            "values.update": write(
                "Sets values in a range of a spreadsheet.",
                spreadsheet_id,
                range_,
                p("values", list[list[str | float | None]], "The data, as a list of rows."),
            ),
            "values.append": write(
                "Appends values after the last row of a table.",
                spreadsheet_id,
                range_,
                p("values", list[list[str | float | None]], "The rows to append."),
            ),
        },
    )


def _web() -> Module:
    return _app(
        "web",
        "The public web.",
        {
            "search.query": read(
                "Web search: ranked results with titles, URLs and snippets.",
                p("q", str, "The search query."),
                p("count", int, "Number of results.", 10),
            ),
            "pages.fetch": read(
                "Fetches a URL and returns its main text content.",
                p("url", str, "The page to fetch."),
            ),
        },
    )


def realistic_catalog() -> list[Module]:
    """About 160 operations across 17 apps, documented the way real APIs are."""
    return [
        _notes(),
        _calendar(),
        _files(),
        _email(),
        _github(),
        _desktop(),
        _browser(),
        _contacts(),
        _slack(),
        _todo(),
        _music(),
        _weather(),
        _maps(),
        _payments(),
        _home(),
        _sheets(),
        _web(),
    ]


# --------------------------------------------------------------------------------------
# The generated catalog
# --------------------------------------------------------------------------------------

# Domain -> resources it manages (singular, as identifiers). Each generated module is a
# vendor-flavoured instance of one domain, e.g. ``nimbus_billing``.
DOMAINS: dict[str, tuple[str, ...]] = {
    "billing": ("invoice", "payment", "credit_note", "tax_rate", "price", "coupon", "customer"),
    "crm": ("lead", "contact", "account", "deal", "opportunity", "activity", "pipeline"),
    "inventory": ("item", "stock_level", "warehouse", "bin", "adjustment", "supplier", "sku"),
    "shipping": ("shipment", "parcel", "label", "carrier", "rate", "pickup", "tracking_event"),
    "hr": ("employee", "department", "position", "time_off_request", "review", "onboarding_task"),
    "payroll": ("pay_run", "payslip", "deduction", "bonus", "timesheet", "tax_form"),
    "helpdesk": ("ticket", "macro", "agent", "sla_policy", "satisfaction_rating", "view"),
    "analytics": ("report", "dashboard", "metric", "segment", "funnel", "event"),
    "marketing": ("campaign", "audience", "email_template", "landing_page", "ab_test", "newsletter"),
    "cms": ("article", "page", "author", "category", "media_asset", "revision", "comment"),
    "wiki": ("space", "page", "attachment", "comment", "template", "label"),
    "forum": ("thread", "post", "topic", "moderator", "badge", "vote"),
    "booking": ("reservation", "room", "guest", "rate_plan", "availability_slot", "cancellation"),
    "fleet": ("vehicle", "driver", "trip", "fuel_log", "maintenance_job", "geofence"),
    "procurement": ("purchase_order", "vendor", "requisition", "quote", "contract", "receipt"),
    "recruiting": ("candidate", "job_posting", "application", "interview", "offer", "scorecard"),
    "learning": ("course", "lesson", "enrollment", "quiz", "certificate", "learner"),
    "survey": ("survey", "question", "response", "respondent", "distribution_list"),
    "monitoring": ("alert", "incident", "monitor", "check", "on_call_schedule", "escalation_policy"),
    "logging": ("log_stream", "log_entry", "saved_query", "retention_policy", "sink"),
    "dns": ("zone", "record", "nameserver", "domain", "certificate"),
    "storage": ("bucket", "object", "lifecycle_rule", "access_key", "snapshot", "volume"),
    "compute": ("instance", "image", "security_group", "key_pair", "load_balancer", "autoscaling_group"),
    "database": ("cluster", "database", "backup", "replica", "user", "migration"),
    "queue": ("queue", "message", "topic", "subscription", "dead_letter_queue"),
    "iam": ("user", "role", "policy", "group", "api_key", "session"),
    "audit": ("audit_log", "finding", "control", "evidence", "auditor"),
    "legal": ("matter", "contract", "clause", "signature_request", "counterparty"),
    "expenses": ("expense", "receipt", "report", "card", "mileage_claim", "approval"),
    "travel": ("trip", "flight", "hotel_booking", "itinerary", "traveler", "fare_alert"),
    "events": ("event", "ticket", "attendee", "session", "speaker", "venue"),
    "restaurants": ("menu", "dish", "order", "table", "reservation", "review"),
    "recipes": ("recipe", "ingredient", "meal_plan", "shopping_list", "cookbook"),
    "fitness": ("workout", "exercise", "goal", "activity", "heart_rate_sample", "challenge"),
    "health": ("appointment", "patient", "prescription", "lab_result", "provider", "claim"),
    "insurance": ("policy", "claim", "quote", "policyholder", "coverage", "premium"),
    "banking": ("account", "transaction", "transfer", "beneficiary", "statement", "card"),
    "trading": ("order", "position", "portfolio", "watchlist", "quote", "trade"),
    "realestate": ("listing", "property", "showing", "offer", "agent", "lease"),
    "energy": ("meter", "reading", "tariff", "outage", "bill", "solar_panel"),
    "telecom": ("subscriber", "plan", "sim_card", "usage_record", "port_request", "device"),
    "iot": ("device", "sensor", "telemetry", "firmware", "gateway", "rule"),
    "transit": ("route", "stop", "departure", "vehicle_position", "fare", "service_alert"),
    "parking": ("lot", "space", "permit", "session", "violation", "rate"),
    "library": ("book", "loan", "hold", "patron", "branch", "fine"),
    "school": ("student", "class", "assignment", "grade", "attendance_record", "teacher"),
    "podcast": ("show", "episode", "transcript", "subscriber", "chapter"),
    "video": ("video", "channel", "playlist", "caption", "live_stream", "upload"),
    "photos": ("photo", "album", "face", "share_link", "edit"),
    "social": ("post", "follower", "comment", "direct_message", "mention", "story"),
    "news": ("article", "feed", "source", "bookmark", "topic"),
    "ads": ("ad", "ad_group", "campaign", "keyword", "budget", "conversion"),
    "loyalty": ("member", "reward", "points_transaction", "tier", "redemption"),
    "donations": ("donation", "donor", "fund", "pledge", "receipt", "campaign"),
    "permits": ("permit", "application", "inspection", "fee", "zoning_case"),
    "tax": ("return", "filing", "form", "payment", "notice", "exemption"),
    "ecommerce": ("product", "order", "cart", "customer", "discount", "return_request", "review"),
    "scheduling": ("appointment", "availability", "resource", "booking_page", "reminder"),
    "docs": ("document", "comment", "suggestion", "template", "folder", "permission"),
    "design": ("file", "frame", "component", "style", "comment", "version"),
}

VENDORS: tuple[str, ...] = (
    "acme", "apex", "atlas", "aurora", "beacon", "birch", "cobalt", "comet", "delta", "ember",
    "falcon", "fjord", "galaxy", "granite", "harbor", "helix", "indigo", "iris", "juniper", "kestrel",
    "lumen", "maple", "meridian", "nimbus", "nova", "onyx", "orbit", "pulse", "quartz", "radian",
    "sable", "sierra", "summit", "tango", "tidal", "umber", "vertex", "willow", "zenith", "zephyr",
)  # fmt: skip

_ATTRIBUTES: tuple[tuple[str, str, str], ...] = (
    # field name, JSON type, phrase used in descriptions
    ("name", "string", "name"),
    ("title", "string", "title"),
    ("status", "string", "status"),
    ("owner_id", "string", "owner"),
    ("tags", "array", "tags"),
    ("due_date", "string", "due date"),
    ("priority", "string", "priority"),
    ("amount", "integer", "amount"),
    ("currency", "string", "currency"),
    ("email", "string", "email address"),
    ("description", "string", "description"),
    ("start_date", "string", "start date"),
    ("end_date", "string", "end date"),
    ("region", "string", "region"),
    ("category", "string", "category"),
    ("notes", "string", "notes"),
    ("quantity", "integer", "quantity"),
    ("price", "integer", "price"),
    ("address", "string", "postal address"),
    ("phone_number", "string", "phone number"),
    ("language", "string", "language"),
    ("timezone", "string", "time zone"),
    ("visibility", "string", "visibility"),
    ("assignee_id", "string", "assignee"),
    ("external_ref", "string", "external reference"),
    ("metadata", "object", "metadata"),
)

_SORTS = ("newest first", "oldest first", "by name", "by last update", "by relevance")
_FILTERS = ("status", "owner", "creation date", "tag", "region", "category", "last update")


def plural(word: str) -> str:
    """English plural of a resource noun (``policy`` -> ``policies``, ``box`` -> ``boxes``)."""
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _words(identifier: str) -> str:
    return identifier.replace("_", " ")


def _a(phrase: str) -> str:
    return ("an " if phrase[:1] in "aeiou" else "a ") + phrase


@dataclass(frozen=True)
class _Verb:
    name: str
    access: AccessLabel
    describe: Callable[[random.Random, str, str, str], str]
    """(rng, resource in words, resource plural in words, domain in words) -> description."""
    fields: Callable[[random.Random, str], list[tuple[str, dict[str, Any], bool]]]
    """(rng, resource identifier) -> (field name, schema, required) triples."""


def _id_field(resource: str) -> tuple[str, dict[str, Any], bool]:
    return (f"{resource}_id", {"type": "string", "description": f"The ID of the {_words(resource)}."}, True)


def _attribute_fields(
    rng: random.Random, resource: str, count: int, required: bool
) -> list[tuple[str, dict[str, Any], bool]]:
    chosen = rng.sample(_ATTRIBUTES, count)
    fields: list[tuple[str, dict[str, Any], bool]] = []
    for name, kind, phrase in chosen:
        schema: dict[str, Any] = {"type": kind, "description": f"The {phrase} of the {_words(resource)}."}
        if kind == "array":
            schema["items"] = {"type": "string"}
        fields.append((name, schema, required and name in {"name", "title"}))
    return fields


def _page_fields(rng: random.Random, resource: str) -> list[tuple[str, dict[str, Any], bool]]:
    fields: list[tuple[str, dict[str, Any], bool]] = [
        ("limit", {"type": "integer", "description": "Maximum number of results to return (1-100)."}, False),
        ("cursor", {"type": "string", "description": "Pagination cursor from a previous response."}, False),
    ]
    for name in rng.sample(["status", "owner_id", "created_after", "updated_since", "tag", "region"], 2):
        fields.append(
            (
                name,
                {"type": "string", "description": f"Only return {plural(_words(resource))} with this {_words(name)}."},
                False,
            )
        )
    return fields


def _choice(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


_VERBS: tuple[_Verb, ...] = (
    _Verb(
        "list",
        "read",
        lambda rng, r, rs, d: _choice(
            rng,
            f"List {rs} in the {d} account, {rng.choice(_SORTS)}.",
            f"Returns a page of {rs}, optionally filtered by {rng.choice(_FILTERS)}.",
            f"Lists all {rs} the caller can see.",
        ),
        _page_fields,
    ),
    _Verb(
        "get",
        "read",
        lambda rng, r, rs, d: _choice(
            rng,
            f"Retrieve {_a(r)} by ID.",
            f"Gets the details of {_a(r)}, including its {rng.choice(_ATTRIBUTES)[2]}.",
            f"Fetch a single {r}.",
        ),
        lambda rng, r: [_id_field(r)],
    ),
    _Verb(
        "create",
        "write",
        lambda rng, r, rs, d: _choice(
            rng, f"Create {_a(r)}.", f"Creates a new {r} in {d}.", f"Add {_a(r)} with a {rng.choice(_ATTRIBUTES)[2]}."
        ),
        lambda rng, r: _attribute_fields(rng, r, rng.randint(2, 5), True),
    ),
    _Verb(
        "update",
        "write",
        lambda rng, r, rs, d: f"Update {_a(r)}'s {rng.choice(_ATTRIBUTES)[2]} or {rng.choice(_ATTRIBUTES)[2]}.",
        lambda rng, r: [_id_field(r), *_attribute_fields(rng, r, rng.randint(1, 4), False)],
    ),
    _Verb(
        "delete",
        "write",
        lambda rng, r, rs, d: _choice(
            rng, f"Delete {_a(r)} permanently.", f"Deletes {_a(r)}. This cannot be undone.", f"Remove {_a(r)}."
        ),
        lambda rng, r: [_id_field(r)],
    ),
    _Verb(
        "search",
        "read",
        lambda rng, r, rs, d: f"Search {rs} by {rng.choice(_ATTRIBUTES)[2]} or {rng.choice(_ATTRIBUTES)[2]}.",
        lambda rng, r: [
            ("query", {"type": "string", "description": f"Text to match against {plural(_words(r))}."}, True),
            ("limit", {"type": "integer", "description": "Maximum number of results."}, False),
        ],
    ),
    _Verb(
        "archive",
        "write",
        lambda rng, r, rs, d: f"Archive {_a(r)} so it no longer appears in lists; it can be restored later.",
        lambda rng, r: [_id_field(r)],
    ),
    _Verb(
        "restore",
        "write",
        lambda rng, r, rs, d: f"Restore an archived or deleted {r}.",
        lambda rng, r: [_id_field(r)],
    ),
    _Verb(
        "export",
        "read",
        lambda rng, r, rs, d: f"Export {rs} as {rng.choice(['CSV', 'JSON', 'a spreadsheet', 'PDF'])}.",
        lambda rng, r: [
            (
                "format",
                {"type": "string", "enum": ["csv", "json", "xlsx", "pdf"], "description": "Output format."},
                False,
            ),
            ("since", {"type": "string", "description": "Only export records changed after this date."}, False),
        ],
    ),
    _Verb(
        "import_records",
        "write",
        lambda rng, r, rs, d: f"Bulk import {rs} from an uploaded file.",
        lambda rng, r: [
            ("file_url", {"type": "string", "description": "URL of the CSV or JSON file to import."}, True),
            ("dry_run", {"type": "boolean", "description": "Validate without writing anything."}, False),
        ],
    ),
    _Verb(
        "approve",
        "write",
        lambda rng, r, rs, d: f"Approve a pending {r}.",
        lambda rng, r: [
            _id_field(r),
            ("comment", {"type": "string", "description": "Reason for the approval."}, False),
        ],
    ),
    _Verb(
        "reject",
        "write",
        lambda rng, r, rs, d: f"Reject a pending {r} with a reason.",
        lambda rng, r: [_id_field(r), ("reason", {"type": "string", "description": "Why it was rejected."}, True)],
    ),
    _Verb(
        "assign",
        "write",
        lambda rng, r, rs, d: f"Assign {_a(r)} to a user or team.",
        lambda rng, r: [
            _id_field(r),
            ("assignee_id", {"type": "string", "description": "User or team to assign it to."}, True),
        ],
    ),
    _Verb(
        "cancel",
        "write",
        lambda rng, r, rs, d: (
            f"Cancel {_a(r)}; {rng.choice(['the counterparty is notified', 'fees may apply', 'it cannot be resumed'])}."
        ),
        lambda rng, r: [_id_field(r), ("reason", {"type": "string", "description": "Cancellation reason."}, False)],
    ),
    _Verb(
        "duplicate",
        "write",
        lambda rng, r, rs, d: f"Make a copy of {_a(r)}.",
        lambda rng, r: [_id_field(r), ("name", {"type": "string", "description": "Name of the copy."}, False)],
    ),
    _Verb(
        "publish",
        "write",
        lambda rng, r, rs, d: (
            f"Publish a draft {r} so it becomes visible {rng.choice(['to everyone', 'to customers', 'on the site'])}."
        ),
        lambda rng, r: [
            _id_field(r),
            ("scheduled_at", {"type": "string", "description": "Publish later, at this time."}, False),
        ],
    ),
    _Verb(
        "stats",
        "read",
        lambda rng, r, rs, d: f"Aggregate statistics about {rs} over a time range: counts, totals and trends.",
        lambda rng, r: [
            ("start_date", {"type": "string", "description": "Start of the range (inclusive)."}, True),
            ("end_date", {"type": "string", "description": "End of the range (exclusive)."}, True),
            ("group_by", {"type": "string", "enum": ["day", "week", "month"], "description": "Bucket size."}, False),
        ],
    ),
    _Verb(
        "history",
        "read",
        lambda rng, r, rs, d: f"List the change history of {_a(r)}: who changed what, and when.",
        lambda rng, r: [
            _id_field(r),
            ("limit", {"type": "integer", "description": "Maximum number of changes."}, False),
        ],
    ),
    _Verb(
        "notify",
        "write",
        lambda rng, r, rs, d: (
            f"Send a notification about {_a(r)} by {rng.choice(['email', 'SMS', 'push notification'])}."
        ),
        lambda rng, r: [
            _id_field(r),
            ("message", {"type": "string", "description": "Text of the notification."}, True),
        ],
    ),
)

_CHILD_VERBS = ("list", "create", "delete", "get", "update")


def _operation_schema(fields: list[tuple[str, dict[str, Any], bool]]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, schema, is_required in fields:
        if name in properties:
            continue
        properties[name] = schema
        if is_required:
            required.append(name)
    # Draft 7, as most MCP servers written with zod declare it (and quicker to check than 2020-12).
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def generated_catalog(modules: int = 1000, operations_per_module: int = 10, seed: int = 0) -> list[Module]:
    """``modules`` modules x ``operations_per_module`` operations, deterministic in ``seed``.

    Each module is a vendor-flavoured instance of a domain (``nimbus_billing``) with three or
    four of the domain's resources; operations are ``resource.verb`` and now and then
    ``resource.child.verb``, with one-line descriptions and JSON Schema inputs whose
    properties carry descriptions.
    """
    rng = random.Random(seed)
    verbs_by_name = {verb.name: verb for verb in _VERBS}
    # 40 vendors x 60 domains = 2,400 distinct names; past that, a numeric suffix keeps them unique.
    combos = [(vendor, domain) for vendor in VENDORS for domain in sorted(DOMAINS)]
    rounds = -(-modules // len(combos))
    names = [
        (f"{vendor}_{domain}" + (f"_{round_ + 1}" if round_ else ""), vendor, domain)
        for round_ in range(rounds)
        for vendor, domain in combos
    ]
    result: list[Module] = []
    for index, (name, vendor, domain) in enumerate(rng.sample(names, modules)):
        resources = rng.sample(DOMAINS[domain], min(len(DOMAINS[domain]), rng.randint(3, 4)))
        operations: dict[str, Operation | Module] = {}
        while len(operations) < operations_per_module:
            resource = rng.choice(resources)
            if rng.random() < 0.12:
                child = rng.choice([r for r in DOMAINS[domain] if r != resource])
                verb = verbs_by_name[rng.choice(_CHILD_VERBS)]
                key = f"{plural(resource)}.{plural(child)}.{verb.name}"
                target = child
                words = f"{_words(child)} of {_a(_words(resource))}"
                plural_words = f"{plural(_words(child))} of {_a(_words(resource))}"
            else:
                verb = rng.choice(_VERBS)
                key = f"{plural(resource)}.{verb.name}"
                target, words, plural_words = resource, _words(resource), plural(_words(resource))
            if key in operations:
                continue
            description = verb.describe(rng, words, plural_words, _words(domain))
            operations[key] = operation(
                input=_operation_schema(verb.fields(rng, target)),
                execute=_noop,
                access=verb.access,
                description=description,
            )
        result.append(
            Module(
                id=f"gen-{index:04d}-{name}",
                name=name,
                description=f"{vendor.title()} {_words(domain)} API.",
                operations=operations,
            )
        )
    return result


# --------------------------------------------------------------------------------------
# FastMCP's BM25, the baseline
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FastMCPBaseline:
    """FastMCP's pieces, imported lazily so the catalogs work without the bench extra."""

    index_class: type[Any]
    """``fastmcp.server.transforms.search.bm25._BM25Index``: ``build(documents)``, ``query(text, top_k)``."""
    tool_class: type[Any]
    """``fastmcp.tools.base.Tool``."""
    extract: Callable[[Any], str]
    """``fastmcp.server.transforms.search.base._extract_searchable_text``."""
    version: str


def fastmcp_tool_name(path: str) -> str:
    """The tool name FastMCP would see for a logical path: dots become underscores."""
    return path.replace(".", "_")


def fastmcp_baseline() -> FastMCPBaseline:
    """Import FastMCP's BM25 search, or print how to install it and exit with status 2."""
    try:
        import fastmcp
        from fastmcp.server.transforms.search.base import _extract_searchable_text
        from fastmcp.server.transforms.search.bm25 import _BM25Index
        from fastmcp.tools.base import Tool
    except ImportError as exc:
        print(
            f"FastMCP is not installed ({exc}); this bench compares against its BM25 search.\n"
            'Install the bench extra:  .venv/bin/pip install -e ".[dev,bench]"',
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    return FastMCPBaseline(_BM25Index, Tool, _extract_searchable_text, fastmcp.__version__)
