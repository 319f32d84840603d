"""Two extra phrasings for each query of the project's own search set, written blind.

The search API takes several phrasings at once, and the execute tool tells the model to
"search two or three ways, including the API verb you expect". This module gives, for every
query in `search_quality.QUERIES`, the two extra phrasings a model would plausibly write at
the same moment: usually one natural paraphrase and one API-style guess (verb + noun, the way
an API might name the operation).

They were written blind, as a model writes them: from the query text alone, without running
any search, without reading the ranking code, and without looking at the catalog's
descriptions. The API-style guesses are only guesses and some will not match the catalog's
names, as a model's would not: it has not seen the catalog before it searches. This file is
never tuned against search results; if a phrasing ranks badly, that is a finding, not a bug
to fix here.
"""

ALTERNATES: dict[str, tuple[str, str]] = {
    "find the email Sam sent about the budget": (
        "search my inbox for messages from Sam mentioning budget",
        "search emails",
    ),
    "reply to Dana's message and say I'll be there": (
        "respond to an email from Dana",
        "reply to email",
    ),
    "forward the invoice email to accounting@acme.com": (
        "send an existing email on to another address",
        "forward message",
    ),
    "send an email to the team with the quarterly report attached": (
        "email a file as an attachment to several people",
        "send email with attachment",
    ),
    "write up a draft to Jordan but don't send it yet": (
        "compose an email and save it without sending",
        "create draft",
    ),
    "download the PDF attached to that message": (
        "get the attachment file from an email",
        "download attachment",
    ),
    "mark all those newsletters as read": (
        "flag several emails as read",
        "mark messages read",
    ),
    "read the whole email conversation with the landlord": (
        "show all the messages in an email thread",
        "get thread",
    ),
    "move my 3pm meeting to tomorrow": (
        "reschedule a calendar event to a different day",
        "update event",
    ),
    "what's on my calendar next week": (
        "show my upcoming events for the coming week",
        "list calendar events",
    ),
    "schedule lunch with Priya on Friday at noon": (
        "add a lunch appointment to my calendar",
        "create calendar event",
    ),
    "cancel the standup on Thursday": (
        "remove a meeting from my calendar",
        "delete event",
    ),
    "accept the invitation to the design review": (
        "RSVP yes to a meeting invite",
        "respond to event invitation",
    ),
    "when are Alex and Maria both free on Tuesday": (
        "find a time when several people are available",
        "check free busy availability",
    ),
    "jot down a note with the wifi password for the cabin": (
        "write a new note",
        "create note",
    ),
    "add milk to my shopping list note": (
        "append a line to an existing note",
        "edit note",
    ),
    "look through my notes for the banana bread recipe I saved": (
        "find a note containing a recipe",
        "search notes",
    ),
    "rename the file Q3 draft.docx to Q3 final.docx": (
        "change the name of a file",
        "rename file",
    ),
    "share the pitch deck with lena@example.com so she can edit it": (
        "give someone edit access to a document",
        "share file permissions",
    ),
    "find the spreadsheet with last year's tax numbers in my drive": (
        "search cloud storage for a spreadsheet about taxes",
        "search files",
    ),
    "I deleted a file by mistake, get it back": (
        "recover a deleted file from the trash",
        "restore file",
    ),
    "how big is backup.zip and when was it last changed": (
        "get a file's size and modified date",
        "get file info",
    ),
    "save this text to a file called summary.txt": (
        "write text content into a new file",
        "create file",
    ),
    "open a bug report in the mycelium repo about the crash on startup": (
        "file a new GitHub issue",
        "create issue",
    ),
    "what PRs are waiting for review in acme/web": (
        "show open pull requests in a repository",
        "list pull requests",
    ),
    "squash and merge pull request 42": (
        "merge a GitHub pull request using squash",
        "merge pull request",
    ),
    "approve Carla's pull request": (
        "give an approving review on a PR",
        "approve pull request review",
    ),
    "close issue 17 as fixed": (
        "mark a GitHub issue as closed",
        "close issue",
    ),
    "leave a comment on issue 88 saying it's a duplicate": (
        "add a comment to a GitHub issue",
        "create issue comment",
    ),
    "why did the CI build fail on main": (
        "see the status and logs of recent workflow runs",
        "list workflow runs",
    ),
    "show me the README of the torvalds/linux repo": (
        "read a file from a GitHub repository",
        "get file contents",
    ),
    "which files does PR 311 touch": (
        "list the changed files in a pull request",
        "get pull request diff",
    ),
    "tag version 2.0 and publish release notes": (
        "make a new GitHub release for a tag",
        "create release",
    ),
    "who changed the config file last week": (
        "show the commit history for a file",
        "list commits",
    ),
    "bring the Terminal window to the front": (
        "switch to an app's window and make it active",
        "focus window",
    ),
    "put the editor and the browser side by side": (
        "arrange two windows in a split screen layout",
        "tile windows",
    ),
    "start the Calculator app": (
        "open an application on the computer",
        "launch app",
    ),
    "take a screenshot": (
        "capture an image of the screen",
        "screen capture",
    ),
    "what's on my clipboard": (
        "get the text I copied",
        "read clipboard",
    ),
    "force quit Photoshop, it's frozen": (
        "kill an application that is not responding",
        "quit application",
    ),
    "open https://example.com in the browser": (
        "go to a web page in a new tab",
        "open url",
    ),
    "which windows are open right now": (
        "show all the windows on my desktop",
        "list windows",
    ),
    "what's Maria Lopez's phone number": (
        "look up a contact's details",
        "search contacts",
    ),
    "save Tom's new work email in my address book": (
        "change the email address on a contact",
        "update contact",
    ),
    "add Jen to the Family group": (
        "put a contact into a contact group",
        "add contact to group",
    ),
    "post in #general that the deploy is done": (
        "send a message to a Slack channel",
        "post message",
    ),
    "what did people say in the design channel today": (
        "read recent messages in a Slack channel",
        "get channel history",
    ),
    "set my status to out sick": (
        "update my Slack status text and emoji",
        "set user status",
    ),
    "thumbs-up the last message from Omar": (
        "react to a message with an emoji",
        "add reaction",
    ),
    "DM Kim about tomorrow's release": (
        "send a direct message to a person on Slack",
        "send direct message",
    ),
    "remind me to renew my passport by March": (
        "add a to-do item with a due date",
        "create task",
    ),
    "check off 'buy groceries'": (
        "mark a to-do item as done",
        "complete task",
    ),
    "what's still on my to-do list": (
        "show my open tasks that aren't finished",
        "list tasks",
    ),
    "play some jazz": (
        "start playing music of a genre",
        "play music",
    ),
    "skip this song": (
        "go to the next track",
        "next track",
    ),
    "turn the volume down to 30%": (
        "lower the playback volume",
        "set volume",
    ),
    "what song is this": (
        "which track is playing right now",
        "get currently playing",
    ),
    "make a playlist for my run": (
        "create a new playlist of running songs",
        "create playlist",
    ),
    "like this track": (
        "save the current song to my library",
        "like song",
    ),
    "what's the forecast in Lisbon": (
        "weather for the next few days in a city",
        "get weather forecast",
    ),
    "will it rain in the next few hours": (
        "hour by hour precipitation forecast",
        "hourly forecast",
    ),
    "how hot is it outside right now in Phoenix": (
        "current temperature in a city",
        "get current weather",
    ),
    "is the air clean enough to go running today": (
        "air quality index for my location",
        "get air quality",
    ),
    "any storm warnings for Miami": (
        "severe weather alerts for a city",
        "list weather alerts",
    ),
    "how do I get to the airport by train": (
        "public transit directions to a destination",
        "get directions",
    ),
    "find a coffee shop near me that's open now": (
        "search for nearby cafes open at the moment",
        "search places nearby",
    ),
    "how long is the drive from Porto to Lisbon": (
        "driving time and distance between two cities",
        "get route distance",
    ),
    "what time does the Louvre close today": (
        "opening hours of a place",
        "get place details",
    ),
    "what are the coordinates of 10 Downing Street": (
        "latitude and longitude for an address",
        "geocode address",
    ),
    "pay Alex back 20 euros for dinner": (
        "send money to a friend",
        "send payment",
    ),
    "how much money do I have in my account": (
        "check my account balance",
        "get balance",
    ),
    "refund the customer's last order": (
        "give the customer their money back for a charge",
        "create refund",
    ),
    "bill Acme Corp for 10 hours of consulting": (
        "send an invoice to a client",
        "create invoice",
    ),
    "what did I spend last month": (
        "show my transactions from the previous month",
        "list transactions",
    ),
    "ask Jamie to pay me for the concert tickets": (
        "send someone a request for money",
        "request payment",
    ),
    "dim the living room lights": (
        "lower the brightness of the lights in a room",
        "set light brightness",
    ),
    "make it warmer in the house": (
        "raise the temperature on the thermostat",
        "set thermostat temperature",
    ),
    "lock the front door": (
        "lock a smart door lock",
        "lock door",
    ),
    "add a row to the expenses spreadsheet": (
        "append a new line of data to a spreadsheet",
        "append row",
    ),
    "look up who won the 2022 World Cup": (
        "search the internet for an answer",
        "web search",
    ),
}
