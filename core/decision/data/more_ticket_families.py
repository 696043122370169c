"""Phrasebook v2's extra issue families (six more per department), phrasebook fresh's extra urgency families
(three more per priority) and phrasebook wide's issue families (six more per department), all of them training
families.

Why: a readout of the frozen base's states, fitted on k training families per department, still read unseen
families better at k = 6 than at k = 5 (results/smollm2_decision/families/family_curve_probe.log), so the six
families of phrasebook v1 may under-describe each department. Each family describes a problem that no val or test
family describes (no unrecognised or unannounced charge, discount, nightly copy or restore, reachability or
undelivered webhook, data shown to the wrong people, lingering or self-granted access, import or report mismatch;
no tax receipt, undelivered email, lost second factor or notification setting), so the held-out splits stay a
transfer test. Session 26's first draft broke that in three places (a webhook family, a nightly job that did not
run, a contractor who could still get in: results/smollm2_decision/families/rule.md, "Withdrawn"); this is the
mended table. Val and test are drawn from v1's families alone in every phrasebook, byte for byte; phrasebook
extra draws its training tickets from these families alone (RL on families a v1 warmup never read); phrasebook
wide (session 35) gives RL twelve such families a department (``WIDE_ISSUE_FAMILIES`` beside v2's).
"""

from core.decision.data.ticket_families import Family, families_of

MORE_ISSUE_FAMILIES: list[Family] = [
    *families_of("BILLING", {
        "wrong_currency": ("train", [
            "We're based in Canada but every month you take the money in US dollars.",
            "Our plan was quoted in euros and the statement came out in pounds.",
            "Is there a way to be charged in our own currency? The conversion fees add up.",
            "My bank added a foreign transaction fee because you bill us from abroad."]),
        "unused_seats": ("train", [
            "We went from {count} users down to a handful halfway through {month}; do we get anything back for the rest?",
            "We removed several people from the team last week, but we're still paying for all of them.",
            "Can the unused part of the year be credited to us after we scaled down?",
            "Half our licences sit empty since the restructure and the amount hasn't changed."]),
        "billing_cycle": ("train", [
            "Can we switch from paying every month to paying once a year?",
            "We'd like all our workspaces on one statement instead of three separate ones.",
            "Is it possible to move our renewal date to the first of the month?",
            "Our budget year starts in {month}; can the plan renew then instead?"]),
        "change_card": ("train", [
            "Our company card expires next month; where do I put the new one?",
            "I need the monthly amount to come off a different card from now on.",
            "Can we pay by bank transfer instead of a credit card?",
            "The card on file belongs to someone who left, we want to switch it to mine."]),
        "purchase_order": ("train", [
            "Our finance team can only pay against a purchase order with net-30 terms.",
            "Procurement needs a formal quote before they'll approve the {amount}.",
            "Can you send a quote for {count} more seats so our finance people can sign it off?",
            "We need a W-9 and your bank details to set you up as a supplier."]),
        "paid_but_reminded": ("train", [
            "Your reminder says we owe {amount} but we paid it on {day}.",
            "We keep getting dunning emails for an amount that already left our account.",
            "The account shows a balance due even though the transfer cleared last week.",
            "Got a final notice for {month} and I have the bank confirmation right here."]),
    }),
    *families_of("INFRASTRUCTURE", {
        "certificate_expired": ("train", [
            "Visitors get a 'your connection is not private' warning on our site since {day}.",
            "Chrome is blocking our page and says the certificate has expired.",
            "The padlock is gone from our address bar and customers think we've been compromised.",
            "Our HTTPS stopped working overnight, browsers refuse to open the page."]),
        "memory_crashes": ("train", [
            "Our workers keep crashing with out-of-memory errors since {day}.",
            "The instance restarts itself every hour and the log just says it was killed.",
            "Memory use climbs all day until the whole thing falls over at night.",
            "Since the last update our containers run out of memory under normal traffic."]),
        "api_errors": ("train", [
            "Roughly one in {count} API calls comes back with a 503.",
            "The API keeps answering 'service unavailable' during our busiest hours.",
            "Our integration fails at random with gateway timeouts from your side.",
            "Since {day} about a third of our API requests fail with an internal error."]),
        "uploads_hang": ("train", [
            "Large files get to 99% and then the upload just sits there forever.",
            "Any attachment over a few megabytes fails to upload with a network error.",
            "Uploading our product photos has been stuck for everyone since {day}.",
            "The progress bar freezes halfway on every upload and then times out."]),
        "wrong_timestamps": ("train", [
            "Every timestamp your system records for us is off by exactly {count} hours.",
            "Since the clocks changed, events are logged an hour in the future.",
            "Times in our audit trail jump backwards now and then, which breaks our sorting.",
            "The server time you report drifts several minutes from the real time."]),
        "keeps_disconnecting": ("train", [
            "The app drops its connection every few minutes and we have to reload.",
            "Live updates keep cutting out, the page says 'reconnecting' all the time.",
            "Our agents get kicked out of the live view several times an hour.",
            "The connection to your service keeps resetting in the middle of a session."]),
    }),
    *families_of("SECURITY", {
        "flagged_attachment": ("train", [
            "Our antivirus flagged a file one of your users shared with us through your platform.",
            "A document that came through your tool set off our malware scanner.",
            "Someone sent us a link through your site that downloads a suspicious program.",
            "Our IT team quarantined an attachment from your system as a trojan."]),
        "key_used_elsewhere": ("train", [
            "Our access key is being used from addresses we don't recognise.",
            "The usage log shows calls with our token from a country where we have no one.",
            "Somebody is making requests with our credentials at 3am, it isn't us.",
            "We see thousands of requests under our key that none of our systems made."]),
        "sign_in_without_sso": ("train", [
            "People can still get in with a plain email and code even though we enforce single sign-on.",
            "The SSO enforcement switch is on, yet the mobile app still accepts a plain password.",
            "Our identity provider should be the only way in, but the old login page still works.",
            "Users are bypassing our company sign-in and we can't see who accessed what."]),
        "vulnerability_report": ("train", [
            "I found a way to make your comment box run scripts in other people's browsers.",
            "I'm a researcher and I think your upload form accepts files that can run code on your servers.",
            "Where can I report a flaw I found in your site responsibly?",
            "Your password reset link can be reused after it's been clicked, that seems dangerous."]),
        "audit_evidence": ("train", [
            "Our auditors need your SOC 2 report and latest penetration test before {month}.",
            "Can you fill in our vendor risk questionnaire about how you protect our data?",
            "We need proof that you encrypt our files at rest for our ISO certification.",
            "Compliance asks for your incident response policy and data processing agreement."]),
        "messages_not_ours": ("train", [
            "Our account sent messages to all our contacts that none of us wrote.",
            "Clients are asking about a strange link we supposedly sent them from your platform.",
            "Posts are appearing under my name that I never made.",
            "Someone is using our workspace to send out spam to our mailing list."]),
    }),
    *families_of("PRODUCT_SUPPORT", {
        "repeat_tasks": ("train", [
            "Is there a way to make a task come back every Monday on its own?",
            "I'd like a checklist to repeat at the start of every month without copying it.",
            "Can reminders be set to recur, say every two weeks?",
            "We redo the same list each week; can the tool repeat it for us?"]),
        "read_only_share": ("train", [
            "Can I show a board to a client so they can look but not change anything?",
            "We want our freelancers to view the plan without editing it.",
            "Is there a view-only link I can send to someone outside the company?",
            "My boss wants to see progress but keeps moving cards around by accident."]),
        "interface_language": ("train", [
            "Everything on my screen is suddenly in German, how can I switch it back to English?",
            "Can the menus be shown in Spanish for our team in Madrid?",
            "My colleague's screen is in French and she can't find where to change it.",
            "Is the app available in Portuguese? Half our staff would prefer it."]),
        "save_as_template": ("train", [
            "Can we save this project setup and reuse it for every new client?",
            "I keep building the same board from scratch, is there a template option?",
            "Is it possible to copy a whole workspace's structure without its contents?",
            "We'd like a starting layout that every new team gets automatically."]),
        "calendar_view": ("train", [
            "Is there a way to see all our deadlines on a calendar instead of a list?",
            "Can due dates show up in Google Calendar or Outlook?",
            "I'd love a timeline view so I can see which weeks are overloaded.",
            "Where can I see everything that's due this month at a glance?"]),
        "bulk_change": ("train", [
            "I need to move {count} items to another status at once, not one by one.",
            "Can I change the owner of all of a person's tasks in one go?",
            "Is there a way to tag a whole selection of records at the same time?",
            "Clicking through hundreds of entries to archive them is killing me, any shortcut?"]),
    }),
]

MORE_URGENCY_FAMILIES: list[Family] = [
    *families_of("P3_LOW", {
        "someday": ("train", ["It would be nice to have at some point.", "No deadline on this one at all.",
                              "Put it on the list for later, there's no pressure."]),
        "cosmetic": ("train", ["It's only a cosmetic thing.", "Purely a looks issue, everything still works.",
                               "The layout is a little off but nothing is broken."]),
        "rare": ("train", ["It has only happened once so far.", "We've seen it maybe twice this year.",
                           "It comes up very rarely."]),
    }),
    *families_of("P2_NORMAL", {
        "one_person": ("train", ["Only one person on our side is affected.",
                                 "Just my account seems to have the problem.", "It's only me, as far as I can tell."]),
        "slower": ("train", ["Our work is slower because of it, though nothing has stopped.",
                             "It's costing us an hour or so a day.",
                             "Things take longer than they should, but they get done."]),
        "recurring": ("train", ["It keeps coming back every few days.", "This happens on and off all week.",
                                "It's intermittent, but it's been going on for a while."]),
    }),
    *families_of("P1_HIGH", {
        "key_account": ("train", ["Our biggest client is affected and has noticed.",
                                  "One of our key accounts can't use it and is unhappy.",
                                  "A major customer is threatening to cancel over this."]),
        "desk_stuck": ("train", ["Our whole front desk can't serve anyone.",
                                 "One whole department can't do any of its work.", "Our sales floor is stuck."]),
        "opening_tomorrow": ("train", ["We open registration for our event tomorrow morning; it has to work by then.",
                                       "Our new office opens tomorrow and it needs to be running.",
                                       "The campaign goes out first thing tomorrow, so this can't wait long."]),
    }),
    *families_of("P0_CRITICAL", {
        "production_halt": ("train", ["Our production line has stopped.", "The warehouse is at a standstill.",
                                      "Trucks are waiting at the dock and nothing can ship."]),
        "safety": ("train", ["Someone could get hurt if this stays broken.", "This affects patient care at our clinic.",
                             "The door locks in our building depend on this and they're failing."]),
        "live_broadcast": ("train", ["We're live on air and it has just failed.",
                                     "Our live stream is failing as we speak.",
                                     "Thousands of attendees are in the hall and the screens are blank."]),
    }),
]
"""Phrasebook fresh's urgency families: three more training families a priority, none of them saying what a val or
test urgency family says (no workaround, flag or FYI, month end or next cycle, follow-up, "today please", escalation
to a manager, emergency, everyone affected right now)."""

WIDE_ISSUE_FAMILIES: list[Family] = [
    *families_of("BILLING", {
        "upgrade_proration": ("train", [
            "We moved up to the bigger plan on {day}; how is the difference for the rest of the month worked out?",
            "If we upgrade halfway through the year, do we pay the full yearly amount again?",
            "Our amount went up by a partial sum after the upgrade and I'd like to understand the maths.",
            "Do you prorate when a team switches plans in the middle of a cycle?"]),
        "account_credit": ("train", [
            "We still have {amount} of credit from last year; can it go towards the next renewal?",
            "Support gave us a goodwill credit in {month}, but I can't see it anywhere on the account.",
            "Can our leftover balance be moved to our sister company's workspace?",
            "Does the credit on our account expire, or does it roll over?"]),
        "billing_contact": ("train", [
            "The statements still go to our old office manager's address; please send them to accounts@ instead.",
            "Can you add our finance manager as a second contact for anything about money?",
            "Our bookkeeper wants the monthly paperwork sent to her address directly.",
            "Who on our side gets the renewal notices? I'd like it to be me."]),
        "pause_plan": ("train", [
            "We're a seasonal business; can we pause the plan over the summer instead of cancelling?",
            "Is there a cheaper way to keep our data while we don't use the service for {count} months?",
            "Our project is on hold until {month}; can we freeze the subscription until then?",
            "Rather than leaving, we'd like to drop to a free tier for a while. Is that possible?"]),
        "refund_to_closed_card": ("train", [
            "The money you sent back went to a card I closed in {month}; how do I actually receive it?",
            "The card you returned the {amount} to no longer exists. Can you send it by bank transfer?",
            "My old debit card was cancelled, so the reimbursement bounced. What happens now?",
            "You credited the card we replaced last week and our bank says it never arrived."]),
        "overpaid_transfer": ("train", [
            "We wired {amount} when the amount due was much less; can the rest be sent back?",
            "Our accounts team paid the same statement twice by bank transfer by mistake.",
            "We rounded up the payment and now have an overpayment sitting with you.",
            "A transfer meant for another supplier went to you by accident on {day}."]),
    }),
    *families_of("INFRASTRUCTURE", {
        "rate_limited": ("train", [
            "We keep getting 429 'too many requests' replies even though we're well under our quota.",
            "Your API started throttling us at {count} calls a minute since {day}.",
            "Our sync job gets rate limited halfway through and never finishes.",
            "What is the actual request limit? We're being cut off far below what the plan says."]),
        "cpu_load": ("train", [
            "The processor on our instance sits at 100% all day and nothing we run explains it.",
            "Since {day} the machine is pinned at full load even when nobody is using it.",
            "Our container's CPU usage tripled after the last update and everything queues behind it.",
            "The host keeps hitting its compute ceiling during the lunchtime peak."]),
        "corrupt_downloads": ("train", [
            "Files we download from our space come out truncated and won't open.",
            "Every zip we fetch since {day} says it is damaged or incomplete.",
            "The PDFs people get from our portal are cut off after the first page.",
            "Large downloads stop at a random point and the file on disk is corrupted."]),
        "stale_cache": ("train", [
            "We changed our logo hours ago but visitors still see the old one.",
            "The old version of our home page keeps being served even after we cleared everything.",
            "Images we replaced on {day} still show up for customers in their browsers.",
            "Our edits go live for us but everyone else gets yesterday's copy of the page."]),
        "capacity_request": ("train", [
            "We expect about ten times our usual traffic for a launch in {month}; can you scale us up ahead of it?",
            "Is there a way to reserve more capacity for a big sale weekend?",
            "Our user numbers doubled this quarter; what do we need so the platform keeps up?",
            "We're planning a TV ad on {day} and need to be sure the app survives the spike."]),
        "maintenance_window": ("train", [
            "Your scheduled maintenance lands right in our busiest hour; can it be moved?",
            "Can we get more notice before planned downtime? We found out as it started.",
            "Which time zone is the maintenance window in, and how long will we be offline?",
            "Is it possible to opt our account out of the upgrade on {day} until after our launch?"]),
    }),
    *families_of("SECURITY", {
        "brute_force": ("train", [
            "Our logs show thousands of failed password attempts on one account overnight.",
            "Someone is trying password after password against our admin user from many addresses.",
            "We see {count} failed sign-in attempts a minute on the same username since {day}.",
            "An attacker seems to be guessing credentials on our team's accounts, can you block them?"]),
        "password_policy": ("train", [
            "Can we require everyone on our team to use passwords of at least 14 characters?",
            "Our policy says passwords must change every 90 days; can your tool enforce that?",
            "Is there a setting to forbid reusing old passwords?",
            "We need proof that weak passwords are refused before our review in {month}."]),
        "fake_support_call": ("train", [
            "Someone phoned us claiming to be from your support team and asked for the code we had just received.",
            "A caller said he worked for you and needed our admin to read out a number from a text message.",
            "One of our staff gave a code to a person on the phone who said he was your technician.",
            "We got a text from 'your support' asking us to confirm our credentials on a call. Is that real?"]),
        "idle_timeout": ("train", [
            "Can sessions be signed out automatically after 15 minutes without activity?",
            "Our auditors want idle users logged out; is there a timeout setting?",
            "People leave the app open on shared computers all day; can it lock itself?",
            "How long does a session stay signed in if someone walks away from their desk?"]),
        "fake_signups": ("train", [
            "Bots are creating hundreds of fake accounts through our sign-up form every night.",
            "Since {day} we get {count} junk registrations an hour from throwaway addresses.",
            "Someone is mass-registering accounts on our site with scripted names.",
            "Our sign-up page is being abused by automated scripts; can you add a challenge?"]),
        "scraping": ("train", [
            "Someone is copying every public profile on our site within minutes of it appearing.",
            "A crawler pulls our whole catalogue each night, ignoring the rules we set.",
            "We think a competitor is harvesting our listings automatically through your pages.",
            "Thousands of page views a second from one source look like someone scraping us."]),
    }),
    *families_of("PRODUCT_SUPPORT", {
        "keyboard_shortcuts": ("train", [
            "Is there a keyboard shortcut to create a new task without reaching for the mouse?",
            "Where can I see a list of all the shortcuts?",
            "Can I change the key that opens the quick search? It clashes with my browser.",
            "I'd love to move cards to the next stage with the arrow keys. Is that possible?"]),
        "mobile_app": ("train", [
            "Is there an app for phones, or do I have to use the browser?",
            "How do I set up the tablet version for our field team?",
            "The phone app shows fewer options than the desktop one; where are the rest?",
            "Can I sign in on my iPad with the same account I use on my laptop?"]),
        "custom_fields": ("train", [
            "Can I add my own field, like the customer's region, to each card?",
            "We'd like a drop-down with our own values on every record. Where do I set that up?",
            "Is there a way to add a number field, like the deal size, to each record?",
            "How do I rename one of the built-in fields to match our team's words?"]),
        "print_view": ("train", [
            "How do I print a board so it fits on one page?",
            "When I print the plan, half the board is cut off.",
            "Can I get a printer-friendly version of a project for a meeting on {day}?",
            "Is there a way to print only the cards assigned to me?"]),
        "profile_settings": ("train", [
            "How do I change my display name and picture?",
            "Where do I set my own time zone so due dates show the right day?",
            "Can I change the email address I sign in with to my new work one?",
            "My job title on my profile is out of date; where do I edit it?"]),
        "time_tracking": ("train", [
            "Can I log the hours I spend on each task?",
            "Is there a built-in timer, or do we need another tool for timesheets?",
            "We bill clients by the hour; can the app add up time per project?",
            "How do I record time against a card after the fact?"]),
    }),
]
"""Phrasebook wide's issue families (session 35): six more training families a department, beside fresh's six. None
describes what a val, test, v1 or v2 family describes (no unrecognised charge, fee or discount; no backup, restore or
scheduled job; no reachability from a region, an office or a webhook; no data shown to the wrong people; no stale,
self-granted or role access; no import, report, total or filter; no receipt, email delivery, queue, lost device,
second factor or notification); tests/core/decision/data/test_natural.py checks that no template of these is nearer
a val or test template (word TF-IDF) than some v1 or v2 training template already is."""
