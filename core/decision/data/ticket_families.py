"""The natural tickets' phrasebook: issue families per department, urgency families per priority, split by family.

Each family is one kind of problem (or one way of saying how urgent it is) with paraphrase templates
written the way customers write, mostly without the department's obvious words. Every family belongs
to exactly one split (``train``, ``val``, ``test``), so a test ticket describes its problem and its
urgency in words no training ticket used: the natural test split measures transfer, not memory.
Slots ``{amount}``, ``{day}``, ``{count}`` and ``{month}`` are filled from ``SLOT_VALUES``; the filler
(greetings, company context, sign-offs) carries no label and is shared by all splits.
"""

from dataclasses import dataclass

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Family:
    """One issue (or urgency) family: its label, its split and its paraphrases."""

    name: str
    label: str
    """A department (issue families) or a priority (urgency families)."""
    split: str
    """``train``, ``val`` or ``test``: the only split whose tickets use these templates."""
    templates: tuple[str, ...]


def families_of(label: str, table: dict[str, tuple[str, list[str]]]) -> list[Family]:
    return [Family(name, label, split, tuple(templates)) for name, (split, templates) in table.items()]


ISSUE_FAMILIES: list[Family] = [
    *families_of("BILLING", {
        "double_charge": ("train", [
            "My card got hit twice for the same month, {amount} each time.",
            "I see the same {amount} twice on my bank statement for one subscription.",
            "Looks like you took the money two times for a single order on {day}.",
            "We were debited {amount} and then again an hour later for the exact same thing.",
            "The payment for {month} went through twice."]),
        "missing_refund": ("train", [
            "You said the money would come back to my account within a week and it still hasn't.",
            "Still waiting on the {amount} your colleague promised to send back.",
            "I cancelled in {month} and was told I'd get my money back, nothing has shown up.",
            "Where is my refund? It has been {count} weeks."]),
        "wrong_invoice": ("train", [
            "The invoice you sent lists more seats than we actually have.",
            "The PDF we got at month end has the wrong company name and VAT number on it.",
            "Our accountant says the amounts on last month's statement from you don't add up."]),
        "failed_payment": ("train", [
            "My card keeps getting declined when I try to renew.",
            "The renewal didn't go through and now our account says it is overdue.",
            "Tried {count} different cards and each one bounces when I hit confirm.",
            "Payment failed again on the renewal page."]),
        "price_confusion": ("train", [
            "Why did our monthly cost jump from {amount} to almost double?",
            "Your website says one amount and what we actually pay each month is another.",
            "I thought the yearly plan was supposed to be cheaper but we paid more than last year.",
            "Your pricing page says one amount and the plan costs us another."]),
        "cancel_renewal": ("train", [
            "How do I stop the plan from renewing? I don't want to pay again.",
            "Please end our subscription at the end of this cycle, we're moving to another tool.",
            "I want to cancel so nothing comes out of my account next month."]),
        "tax_receipt": ("val", [
            "I need a receipt showing our tax ID for the {amount} we paid in {month}.",
            "Our finance team needs proper VAT paperwork for everything we paid last quarter.",
            "Can you resend proof of purchase for {month}? My expense report is due.",
            "Please send an invoice with our tax ID on it for {month}."]),
        "unexpected_fee": ("test", [
            "There's a {amount} line on my card from you that I don't recognise.",
            "Something called a 'service adjustment' showed up on our account and nobody here agreed to it.",
            "We got hit with an extra cost for going over some limit that nobody ever mentioned.",
            "Why is there an extra charge of {amount} on this month's bill?"]),
        "discount_not_applied": ("test", [
            "The 20% code your sales rep gave us wasn't taken off the renewal.",
            "We were promised the nonprofit rate and still paid the full amount in {month}.",
            "The coupon from your newsletter says it was accepted but the total didn't go down.",
            "The discount code never made it onto our invoice."]),
    }),
    *families_of("INFRASTRUCTURE", {
        "site_down": ("train", [
            "Our site just shows a blank white page for everyone.",
            "The app won't load at all, it just spins and spins.",
            "None of our pages come up, we get a 502 error on every one of them.",
            "Is there an outage? Our site won't load."]),
        "slow_responses": ("train", [
            "Everything takes ten or more seconds to load since {day}.",
            "Pages crawl today; clicking anything takes forever to respond.",
            "Calls to your API got really sluggish this week, some take {count} seconds.",
            "Server response times have been terrible since {day}."]),
        "storage_full": ("train", [
            "We're getting an error that there is no space left on the machine.",
            "Writes fail with a 'disk full' message and our nightly job stopped.",
            "The instance ran out of room and now nothing new gets saved."]),
        "release_stuck": ("train", [
            "Our release has been sitting at 'pending' for hours and never goes live.",
            "The build runs forever and nothing ships.",
            "We pushed a new version {day} and the old one is still what people see.",
            "Our deploy has been stuck for hours."]),
        "query_timeouts": ("train", [
            "Queries are timing out and our data won't save.",
            "Saving any record gives 'connection timed out' after a full minute.",
            "Our reports page errors out because the data store takes too long to answer.",
            "The database connection keeps timing out."]),
        "domain_unreachable": ("train", [
            "Our custom domain stopped pointing at the app after we renewed it.",
            "People who type our web address get 'site can't be reached', the direct link still works.",
            "The certificate on our address expired and browsers now show a big red warning."]),
        "email_delivery": ("val", [
            "The notification emails your platform sends for us stopped arriving.",
            "Our customers aren't getting the sign-up emails anymore and the send log is empty.",
            "Messages from our app to users are sitting in a queue since {day} and never go out.",
            "Is there an outage on the email side? Nothing gets sent."]),
        "backup_restore": ("test", [
            "We tried to roll back to last night's snapshot and the restore fails halfway through.",
            "Our nightly copy of the data hasn't run since {day}, the newest one is a week old.",
            "We lost some records and can't get the backups to come back, it keeps erroring.",
            "Restoring the database from last night's backup fails every time."]),
        "regional_reachability": ("test", [
            "Users in Asia can't reach us at all but everyone in Europe is fine.",
            "Our office can't connect to your endpoint, yet it works from a phone hotspot.",
            "Webhooks from your side stopped reaching our endpoint around {day}.",
            "Your servers are unreachable from our office network only."]),
    }),
    *families_of("SECURITY", {
        "suspicious_signin": ("train", [
            "Someone signed in to my account from a country I've never been to.",
            "I got an alert about a sign-in from a device I don't own.",
            "My account shows activity at 3am {day} and I was asleep.",
            "There was a login from Brazil on my account and I've never been there."]),
        "unrequested_reset": ("train", [
            "I got an email to reset my credentials that I never asked for.",
            "{count} 'change your passcode' emails showed up overnight and it wasn't me.",
            "Somebody keeps requesting new sign-in codes for my email address.",
            "I got a password reset email I never asked for."]),
        "impersonation_email": ("train", [
            "Some of our staff got an email pretending to be from you asking them to confirm their details.",
            "A message with your logo asked me to type my card number into a weird link.",
            "We got a fake 'your account will be closed' email that copies your branding.",
            "Our staff received a phishing email using your logo."]),
        "leaked_secret": ("train", [
            "A developer accidentally pushed our access token to a public repo.",
            "Our secret key ended up in a screenshot someone posted online.",
            "An API token of ours was pasted into a public forum thread {day}.",
            "Security issue: a developer committed our API key to GitHub."]),
        "unknown_session": ("train", [
            "There's a phone listed among my active sessions that isn't mine.",
            "The list of signed-in devices shows a laptop in another city.",
            "I see a session from a browser none of us use."]),
        "account_takeover": ("train", [
            "I can't get into my account and the recovery email was changed to one I don't know.",
            "Someone changed my name and email on the account and locked me out.",
            "My account now has a different phone number on it and it's not mine.",
            "Someone changed my password and now I can't get in."]),
        "lost_second_factor": ("val", [
            "I lost the phone that gets my verification codes and someone else may have it.",
            "My authenticator device was stolen {day}, can you make sure nobody uses it to get in?",
            "The six-digit codes are going to an old number I no longer control.",
            "Lost my 2FA phone, please secure my account."]),
        "data_exposure": ("test", [
            "One of our customers says they could see another company's records in their dashboard.",
            "A shared link to our reports is open to anyone, including people who left the company.",
            "Files we marked private are showing up when you search from a logged-out browser.",
            "Possible data breach: a customer could see another company's records."]),
        "privilege_abuse": ("test", [
            "An ex-employee still has admin rights and was active {day}.",
            "Someone on our team gave themselves owner access without asking anyone.",
            "A contractor whose contract ended in {month} can still open everything.",
            "Security concern: an ex-employee still has admin rights."]),
    }),
    *families_of("PRODUCT_SUPPORT", {
        "find_export": ("train", [
            "Where did the button to download everything as a spreadsheet go?",
            "I can't figure out how to get my data out as a CSV.",
            "Is there a way to save this table to Excel? I looked everywhere.",
            "How do I export my data to CSV?"]),
        "invite_colleague": ("train", [
            "How can I add my colleague so she can see our projects?",
            "Is there a way to give a new hire access to our workspace?",
            "I want {count} people from my team to join, where do I send the invite from?",
            "How do I invite a teammate to our workspace?"]),
        "layout_changed": ("train", [
            "The new layout moved everything and I can't find my saved views.",
            "After the update the menu on the left is gone.",
            "Since {day} the page looks different and the buttons I used are missing.",
            "The product looks totally different since the update, where are my saved views?"]),
        "wishlist": ("train", [
            "It would be great if we could switch to a dark theme.",
            "Could you add a way to sort the list by date?",
            "Any plans to let us pin favourite projects to the top?",
            "Feature request: dark mode please."]),
        "dead_help_link": ("train", [
            "The getting-started guide link goes to a 404 page.",
            "The help article about reports just shows an empty page.",
            "The video walkthrough in your docs won't play anymore.",
            "The tutorial link in the onboarding email is broken."]),
        "integration_setup": ("train", [
            "How do I connect this to our Slack so messages show up there?",
            "I'm trying to hook up the calendar sync but the steps in the docs don't match the screens.",
            "The Zapier connection asks for something called a workspace code and I can't find it."]),
        "notification_settings": ("val", [
            "How do I stop getting an email every time someone comments?",
            "Can I choose which alerts reach me on my phone?",
            "I get {count} digest emails a day, can I make it one weekly summary?",
            "How do I turn off comment notifications?"]),
        "data_import": ("test", [
            "I'm bringing our old contacts over from a spreadsheet and the columns don't line up.",
            "The import wizard keeps skipping half the rows from my file.",
            "Dates from our old system come in as text after the import and I can't sort them.",
            "How do I import contacts from a spreadsheet? The columns don't line up."]),
        "report_mismatch": ("test", [
            "The weekly summary chart shows different totals than the table right below it.",
            "The filter on the dashboard seems to ignore the date range I pick.",
            "The numbers in the exported report and the ones on screen are not the same.",
            "Is this a known issue with the reporting feature? The totals don't match the table."]),
    }),
]

URGENCY_FAMILIES: list[Family] = [
    *families_of("P3_LOW", {
        "curious": ("train", ["No rush, just curious.", "Not urgent at all, just wondering.",
                              "Just curious when someone gets a chance."]),
        "whenever": ("train", ["Whenever someone has a moment is fine.", "Get to it whenever, honestly.",
                               "Any time in the next few weeks works for us."]),
        "minor": ("train", ["It's more of a small annoyance than anything.", "Honestly it's minor.",
                            "Low impact, we can live with it for now."]),
        "workaround": ("val", ["We found a way around it, so take your time.",
                               "There's an easy workaround, so it can wait."]),
        "fyi": ("test", ["Mostly flagging it so you know.", "Just an FYI, nothing depends on it.",
                         "Not blocking anything on our end, just letting you know."]),
    }),
    *families_of("P2_NORMAL", {
        "this_week": ("train", ["Would be good to sort this out this week.", "Ideally fixed in the next few days.",
                                "Hoping for a fix within the week."]),
        "some_people": ("train", ["A handful of our people have noticed.", "A couple of colleagues hit it too.",
                                  "A few of our users mentioned it."]),
        "nuisance": ("train", ["It's slowing us down a bit but we're still working.",
                               "It's a nuisance, not a blocker.", "Annoying, but we're managing for now."]),
        "month_end": ("val", ["We'd like it resolved before the end of the month.",
                              "It needs to be settled before our next cycle starts."]),
        "second_ask": ("test", ["This is my second message about it, a reply would be appreciated.",
                                "I asked last week too, could someone follow up?",
                                "Still waiting on an answer from my earlier note, nothing dramatic."]),
    }),
    *families_of("P1_HIGH", {
        "team_blocked": ("train", ["This is blocking my whole team today.",
                                   "Half the office can't do their work until this is fixed.",
                                   "My team is stuck until this gets sorted."]),
        "deadline": ("train", ["We have a client demo tomorrow morning and need this sorted.",
                               "Our launch is tomorrow and this has to be fixed before then.",
                               "We have a hard deadline tonight."]),
        "many_complaints": ("train", ["Lots of our customers are complaining.",
                                      "We're getting a stream of complaints about it.",
                                      "Many of our users are affected and angry."]),
        "today_please": ("val", ["Need someone on this today please.", "Please look at this as soon as possible."]),
        "escalated": ("test", ["My manager asked me to escalate this, it needs attention today.",
                               "Our director wants this fixed before end of day.",
                               "This got escalated internally, we need an answer within hours."]),
    }),
    *families_of("P0_CRITICAL", {
        "no_orders": ("train", ["We can't take orders at all right now.", "Nobody can check out on our store.",
                                "Sales have completely stopped because of this."]),
        "total_stop": ("train", ["Nothing works for anyone, it's a full stop.",
                                 "Everything is dead for every single user.",
                                 "Our entire business is offline."]),
        "losing_money": ("train", ["We're losing money every minute this goes on.",
                                   "Every minute of this costs us thousands.",
                                   "This is burning revenue as we speak."]),
        "emergency": ("val", ["This is an emergency.", "Treat this as an emergency please, all hands."]),
        "everyone_now": ("test", ["All of our customers are affected right now.",
                                  "Every client we have is hit at this very moment.",
                                  "It's hitting our whole customer base as I type this."]),
    }),
]

DEPARTMENT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "BILLING": ("billing", "bill", "invoice", "charge", "refund", "payment", "price", "pricing"),
    "INFRASTRUCTURE": ("infrastructure", "server", "outage", "database", "latency", "deploy", "downtime"),
    "SECURITY": ("security", "secure", "password", "hack", "phishing", "breach", "login"),
    "PRODUCT_SUPPORT": ("product", "support", "feature", "tutorial", "how do i"),
}
"""Each department's name and obvious words; a ticket with none of them (any department) is ``no_keyword``."""

SLOT_VALUES: dict[str, tuple[str, ...]] = {
    "amount": ("$19", "$49.99", "€120", "£35", "$230", "$8.50", "€1,200"),
    "day": ("Monday", "Tuesday", "yesterday", "last Friday", "this morning", "the weekend", "Thursday night"),
    "count": ("two", "three", "five", "a dozen", "40", "6"),
    "month": ("March", "June", "September", "December", "January", "last month"),
}
GREETINGS = ("Hi,", "Hello,", "Hi team,", "Hey there,", "Good morning,", "Hi all -", "Dear team,", "Hello again,")
COMPANY_CONTEXT = (
    "We're a small bakery chain and use you for our online shop.",
    "I run operations at a 40-person design agency.",
    "We've been customers for about three years now.",
    "I'm the office manager, not a tech person, so bear with me.",
    "Our team is spread over two time zones.",
    "We're a nonprofit that runs volunteer programmes.",
    "I took over this account from a colleague who left.",
    "We mainly use the tool for client projects.",
)
SIGNOFFS = ("Thanks, Maria", "Cheers, Tom", "- Priya", "Thanks in advance!", "Best, Jonas",
            "Regards, the Acme Foods team", "Thank you", "Sent from my phone")


def families_in(split: str, table: list[Family]) -> list[Family]:
    """The families of ``table`` assigned to ``split``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return [f for f in table if f.split == split]
