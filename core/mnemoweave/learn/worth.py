"""Which classified sentences are worth a card, and as what kind.

A card holds what outlives the conversation: the user's standing rules and preferences,
facts about the user, standing goals, decisions, and findings about their work (causes,
pitfalls and their fixes). Questions, one-off requests to the assistant, progress reports
and general knowledge any assistant can say again make no card: a person reviews every
card, so noise costs their time.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mnemoweave.text import cjk_count, content_words

_QUESTION = re.compile(r"[?？]\s*$|吗[。]?$|能不能|可不可以|要不要")
# A request to the assistant: the task of this turn ("add a test for X", "帮我..."), or the
# framing of a question ("I'm looking for ideas", "I was wondering").
_REQUEST = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|now|also|then|great|thanks)[,!.]?\s+)*"
    r"(?:(?:can|could|would|will) you\b|please\b|pls\b|let'?s\b|help me\b"
    r"|(?:add|fix|write|rewrite|create|make|build|implement|refactor|update|change|remove"
    r"|delete|rename|move|give|tell|show|explain|list|summari[sz]e|translate|generate|draft"
    r"|improve|edit|check|review|test|run|find|describe|suggest|recommend|provide|include"
    r"|correct|continue|expand|shorten|convert|extract|compare|analy[sz]e|design|outline"
    r"|format|take|put|turn|debug|investigate|clean up|set up|look into|try|get|send|post"
    r"|paste|commit|push|merge|deploy|document|comment|split|replace|bump|upgrade|install)\b)"
    r"|\bi (?:need|want|would like|'d like) you to\b"
    r"|\byour (?:goal|task|job|objective|role|mission) is\b|^you (?:will|must|are to)\b"
    r"|^(?:act as|pretend (?:to be|you are))\b"
    r"|\b(?:i'?m|i am|i was|we'?re) (?:\w+ )?(?:looking|searching|hoping) for (?:[\w-]+ ){0,3}"
    r"(?:advice|help|ideas?|tips|suggestions|recommendations|inspiration|guidance|resources"
    r"|information|info|options)\b"
    r"|\bwonder(?:ing)? (?:if|whether|what|how|about|which)\b|\bi need (?:some |a little |your "
    r"|more )?(?:help|advice|ideas|tips|suggestions|recommendations|guidance)\b"
    r"|\bany (?:ideas|tips|suggestions|recommendations|advice)\b"
    r"|[，,；;]\s*(?:请|麻烦)?你?帮我"
    r"|^(?:顺便|另外|然后|再|也|还有|今天|现在|先|等下|回头|接下来)*[，,]?(?:(?:请|麻烦)?你?帮(?:我|忙)|(?:请|麻烦)你?|(?:给|把|替)\S"
    r"|为(?![了什何])|(?:写|加|改|修|实现|重构|优化|补|删|去掉|换|升级|排查|解释|翻译|总结|看看|看一下"
    r"|查一下|记一下))",
    re.IGNORECASE,
)
# A standing rule: "from now on", "must", "必须", "以后都", "禁止", "一律", or a clause that
# opens with "always", "never", "don't", "不要" ("never commit directly to main").
_RULE = re.compile(
    r"\b(?:from now on|going forward|from here on|whenever|at all times|prefer|i'?d rather"
    r"|would rather|must(?!-| be| have|'ve)(?:n'?t| not)?)\b"
    r"|(?:^|[,;:]\s*|\b(?:please|and|but|so|just|then)\s+)(?:always|never|don'?t|do not|avoid)\b"
    r"(?! \w+ed\b)(?! (?:worry|mind|know|care|think|hesitate|get me wrong|understand|see|have"
    r"|forget|be|feel|in|on|at|a|an|the|so|very|with|for|when|like|there|here)\b)"
    r"|\b(?:i|we) (?:always|never)\b(?! (?:knew|know|thought|realized|expected|imagined|heard"
    r"|noticed|understood|got|get|been|had|saw|felt|forget|forgot|miss|seem|end|enjoy|would)\b)"
    r"|(?:^|[,;:]\s*|\b(?:please|and|but|so|just|then|also)\s+)make sure\b|,\s*ever\b"
    r"|(?:^|[，,：:；;。])\s*(?:以后|今后|往后)|(?:以后|今后|往后)(?:都|要|一律|统一|别|不要|必须|请|记得|就)"
    r"|从现在|一律|永远|每次.{0,10}(?:都要|都得|必须|记得|先)|都用|必须|务必|禁止|严禁"
    r"|不许|不准|不得|始终|总是|统一(?:用|使用|成|为)|(?:^|[，,：:；;])\s*(?:别|千万别|请勿)"
    r"|(?<!要)不要(?!紧)|(?<![我你他她])不能(?!确定|肯定)|千万|记得|一定要"
    r"|(?:看到|遇到|发现).{0,12}(?:就|直接)",
    re.IGNORECASE,
)
# A reminder is a rule even where it names a goal's words ("千万记得发版前先备份数据库").
_REMIND = re.compile(r"千万|记得|务必|一定要|\bmake sure\b|\bnever\b", re.IGNORECASE)
_LIKES = re.compile(
    r"\b(?:i|we)(?:'d| would)? (?:\w+ )?(?:like|love|enjoy|hate|dislike|prefer|adore|rather)\b"
    r"|\b(?:rather than|can'?t stand|my favou?rite|(?:big |huge )?fan of)\b"
    r"|喜欢|偏好|偏爱|习惯|讨厌|受不了|宁愿|宁可|倾向|还是用|就用|用.{1,12}就(?:行|好|可以)",
    re.IGNORECASE,
)
# "I like the template": a reaction to what the assistant just said, not a standing taste.
_REACTION = re.compile(
    r"\b(?:like|love|enjoy)s? (?:the|this|that|these|those|your|it|them|how|what)\b"
    r"|\b(?:sounds|looks) (?:great|good|nice|perfect|amazing)\b",
    re.IGNORECASE,
)
# A choice between options, unless a standing rule: a decision (a conclusion).
_DECIDE = re.compile(
    r"\b(?:let'?s (?:go with|use|switch|keep|stick|do|make)|(?<!to )(?<!good to )go with"
    r"|stick with|switch(?:ed)? to|we(?:'ll| will) (?:use|go with|switch|keep)|decided|we decide"
    r"|it is for|stays? the)\b|^forget (?:about )?\S+[.!]?$"
    r"|那就|就用|用.{1,24}吧|换成|换到|改用|决定|定了|就按|按.{1,24}(?:来|吧)|保留"
    r"|^(?:可以|行|好的?|好吧)[，,]\s*(?!我)\S.{3,}",
    re.IGNORECASE,
)
# A standing goal of the project or the user: a goal word or a time frame, not a task of
# this turn ("this quarter we are migrating...", "我们的目标是下个月上线 v2").
_MONTH_NAMES = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_GOAL = re.compile(
    r"\b(?:(?:the|our|my|main|ultimate|long-term|primary|first|next|this \w+'?s?) (?:goals?"
    r"|objectives?|aims?|targets?|priorit(?:y|ies)|milestones?|deadline|focus|mission)"
    r"|(?:goal|objective|priority|focus|deadline|milestone)s? (?:is|are|for|:)|roadmap|next up"
    r"|aim(?:ing)? (?:to|for)|ddl|(?:this|next) (?:week|sprint|month|quarter|year|release"
    r"|iteration|cycle)|q[1-4]|by (?:the end of |end of |next )?(?:monday|tuesday|wednesday"
    rf"|thursday|friday|saturday|sunday|tomorrow|eod|eow|(?:{_MONTH_NAMES})\b(?: \d{{1,2}})?"
    r"|the \d{1,2}(?:st|nd|rd|th))|before (?:the )?(?:launch|release|deadline|demo)"
    rf"|in (?:{_MONTH_NAMES})\b|(?:we|i)(?:'re| are|'m| am) (?:migrating|moving|rewriting|porting"
    r"|shipping|launching))\b"
    r"|目标|任务|计划|规划|优先级|里程碑|路线图|截止|这周|本周|下周|这个月|本月|下个?月|季度|今年|年底"
    r"|月底|迭代|sprint|争取|之前要|之前得|之前必须|前要|前得|上线|发版",
    re.IGNORECASE,
)
# Not a goal: an event that happened ("今天终于发版了"), or how the user feels about one.
_NOT_GOAL = re.compile(
    r"\b(?:finally|went live|shipped it|nervous|excited|exhausted|tired|haha|lol)\b"
    r"|终于|已经.{0,12}了|(?:发版|上线|发布|完成)了|紧张|累死|好累|开心|激动|哈哈",
    re.IGNORECASE,
)
# The user's own plan with a time frame: "I'm preparing a talk on DuckDB for March".
_PLAN = re.compile(
    r"\b(?:i|we)(?:'m|'re| am| are) (?:\w+ )?(?:preparing|planning|working on|going to|migrating"
    r"|moving|building|launching|shipping|aiming)\b|我们?(?:在|正在)?(?:准备|计划|打算)",
    re.IGNORECASE,
)
# A pitfall, or a fault with its cause or fix: knowledge, whatever its form.
_PITFALL = re.compile(
    r"\b(?:gotcha|pitfall|caveat|footgun|watch out|beware|heads[- ]up|workaround"
    r"|(?:crash|hang|deadlock|fail|break|panic|leak|segfault)(?:s|es|ed)? (?:unless|if|when)"
    r"|unless you (?:set|pass|add|use|enable|disable|run|pin))\b"
    r"|踩坑|有坑|坑[:：]|注意[:：]|小心|解决(?:办法|方法|方案)是|规避|会导致|会崩|会挂|会卡死|会报错"
    r"|(?:需要|得|要)(?:设置|设|加|改|装|开启|关闭|关掉).{1,60}才(?:行|能|可以)",
    re.IGNORECASE,
)
# Where the user's things are and what they are made with: a fact about the project
# ("the config lives in `~/.config/tally/config.toml`", "代码在 `server/` 目录，用的 Taro").
_WHERE = re.compile(
    r"\b(?:lives?|sits?|lands?|goes|go|is kept|are kept|is stored|are stored)"
    r" (?:in|at|on|under|to)\b"
    r"|\b(?:runs? on|is hosted on|is deployed to|is written in|is built with|the backend is"
    r"|the frontend is)\b"
    r"|(?:放|代码|配置|数据|文件|脚本|规则)在(?!哪)|在\s*`|用的是?|是用?\S{1,12}写的|部署在|跑在|后端是|前端是",
    re.IGNORECASE,
)
# A fault the user reports: the problem half of a pitfall, a card only with its cause or fix.
# Words only software has faults in say so alone; the others need a name of the work.
_SOFTWARE_FAULT = re.compile(
    r"\b(?:bug|crash(?:es|ed|ing)?|exception|stack ?trace|segfault|oomkilled|out of memory"
    r"|(?:returns?|returned|throws?|threw|gets?|got|gives?|gave) (?:an? |http |status )?[45]\d\d)\b"
    r"|闪退|崩溃|崩了|就崩|报错|报.{1,12}?的?错|内存泄漏|返回\s*[45]\d\d",
    re.IGNORECASE,
)
_FAULT = re.compile(
    r"\b(?:crash(?:es|ed|ing)?|fail(?:s|ed|ing)?|broke|breaks|hangs?|hung|timed? out|times out"
    r"|panic(?:s|ked)?|oomkilled|out of memory|error|exception|leaks?|stuck|slow(?:er)?"
    r"|\d{3} (?:error|on|from))\b"
    r"|闪退|崩溃|崩了|报错|超时|失败|卡死|卡住|很慢|变慢|不生效|没生效|丢了|内存泄漏|错位|乱码",
    re.IGNORECASE,
)
_CAUSE = re.compile(
    r"\b(?:because|caused|cause|due to|fixed|fixes|so that|root cause|turned out|turns out"
    r"|which (?:is why|means))\b|,\s*so\b"
    r"|原因|因为|导致|所以|问题出在|原来是",
    re.IGNORECASE,
)
# How-to advice in general ("You can ...", "Try ...", "Here's an example"): what any
# assistant can say again.
_ADVICE = re.compile(
    r"^(?:(?:if|when|once|to|for) [^,:]{1,120}[,:] )?(?:you (?:can|could|may|might|should|need"
    r"|'ll|will|would)|try|consider|make sure|check|create|here'?s|here is|for (?:example"
    r"|instance)|in this (?:example|code|script|snippet|version)|this (?:code|script|function"
    r"|example|will)|note|notice"
    r"|remember)\b|^\*\*",
    re.IGNORECASE,
)
# An assistant's progress report ("Done, ...", "改好了：...") is not knowledge, unless it
# says why something happened.
_REPORT = re.compile(
    r"^(?:done|ok|okay|sure|will do|starting|written|changed|updated|i (?:read|looked at"
    r"|checked|went through|opened|count)|明白|好的?|收到"
    r"|[^，,。]{0,20}(?:改|写|加|迁|换|修|弄|删)好了|搞定|已)",
    re.IGNORECASE,
)
# What the assistant will do next ("I'll start with ...", "我先写 ..."): not knowledge yet.
_NEXT = re.compile(
    r"^(?:\W*(?:ok(?:ay)?|sure|next|then|so)\b[,.:]?\s*)*(?:i'?ll|i will|let me)\b"
    r"|\blooking into it\b"
    r"|^(?:好的?[，,。]?\s*)?(?:我先|我来|接下来|下一步)[^了：:]*$",
    re.IGNORECASE,
)
# The assistant taking up what the user said ("Got it: raising the part size keeps ..."):
# the user's words again, not news.
_ACK = re.compile(
    r"(?:got it|understood|noted|makes sense|明白了?|收到|了解)\s*[.:,!，：。！]", re.I
)
# What the assistant proposes ("I'd propose drift as the local store", "建议合成一个接口"):
# a decision once the user takes it, nothing until then.
_PROPOSE = re.compile(
    r"\b(?:i'?d|i would|i) (?:propose|suggest|recommend)\b|\bmy (?:proposal|suggestion)\b"
    r"|^(?:我)?建议|我的建议",
    re.IGNORECASE,
)
# What the assistant did ("I changed X", "我把 X 改成 Y"): the fix that goes with a finding,
# never a card on its own.
_DID = re.compile(
    r"^(?:i|we)(?: also| then| now| just)? (?:added|changed|replaced|moved|created|wrote|updated"
    r"|removed|renamed|converted|put|set|ran|rewrote|fixed|drafted|documented|switched"
    r"|installed|upgraded|pinned|dropped|enabled|disabled|made|kept|stopped|deployed)\b"
    r"|^(?:added|changed|replaced|moved|created|wrote|updated|removed|renamed|converted"
    r"|rewrote|fixed|switched|installed|upgraded|pinned|dropped|aligned|bumped|checked"
    r"|regenerated|migrated)\b"
    r"|^我(?:也|还|先|又)?(?:把|加了|改了|删了|换了|写了|给)|^(?:生成|新建|创建|添加|加|改|删|写)了",
    re.IGNORECASE,
)
_STEPS = re.compile(r"(?<![\d.(])(?:\d{1,2}[.)、]|\(\d\))\s|首先|然后|\bfirst\b|\bthen\b", re.I)

# --- facts about the user ------------------------------------------------------------------

# Up to two short lead-in phrases before a clause ("By the way, speaking of X, I ...").
_LEAD = r"^(?:[^,;:.!?]{0,40}[,;:]\s*){0,2}"
_LEAD_ZH = r"^(?:[^，,：:；;。]{0,12}[，,：:；;]\s*){0,2}"
# The user speaking of themselves: "I", "my", "we" as the subject of a clause near the start.
_SELF = re.compile(
    rf"{_LEAD}(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our)\b|{_LEAD_ZH}(?:我|我们|咱们|本人)",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
    r"|forty|fifty|hundred|thousand|dozen|twice"
)
_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# Something particular: a number, a date, a name (a capitalised word after the first).
_PARTICULAR = re.compile(
    rf"\d+|(?i:\b(?:{_NUMBER_WORDS})\b|\b(?:{_DAYS})s?\b"
    r"|\b(?:yesterday|today|tonight|tomorrow|ago|every (?:day|week|month|morning|evening|night"
    r"|year)|each (?:day|week|month)|daily|weekly|monthly|last (?:week|weekend|month|year"
    r"|night|summer|winter|spring|fall|autumn))\b)"
    r"|(?<=[\s-])[\"“']?(?:[A-Z][a-z]+|[A-Z]{2,}[a-z]*)",
)
_PARTICULAR_ZH = re.compile(
    r"\d+|[一二两三四五六七八九十百千万几半]\s*(?:个|年|月|天|次|周|小时|分钟|岁|本|件|块|元|公里|斤|人)"
    r"|昨天|前天|上周|上个月|去年|今年|每天|每周|每月|周[一二三四五六日末]|星期|礼拜|[A-Za-z]{2,}"
)
# Musings and intentions are not facts: "I think ...", "I'll look into it", "I'm curious".
_MUSING = re.compile(
    rf"{_LEAD}(?:i|i'm|i've|i'd|i was|i had)"
    r" (?:(?:also|still|actually|really|just|even|now|kind of|sort of|definitely|particularly"
    r"|a bit|pretty|been|always|never|so|very|mostly|mainly) )*"
    r"(?:think|thought|guess|believe|feel|felt|hope|wish|want|wanted|need|suppose|agree"
    r"|apologi[sz]e|appreciate|wonder|might|may|can|can'?t|cannot|could|will|would like|like to"
    r"|love to|curious|interested|not sure|unclear|glad|happy|excited|sorry|afraid|thinking"
    r"|considering|hoping|wondering|leaning|willing|meaning to|looking (?:at|into|for|forward|to)"
    r"|having (?:some |a few |a bit of )?(?:issues|trouble|problems)|trying to (?:decide|figure"
    r"|find|choose|understand)|heard|no idea|planning|going to|don'?t (?:think|know|see)"
    r"|didn'?t (?:realize|know|expect|think))\b"
    rf"|{_LEAD}i'?ll\b"
    rf"|{_LEAD_ZH}我(?:也|还|其实|一直|再)?(?:觉得|认为|想|希望|猜|感觉|估计|看|去"
    r"|打算|准备)"
    r"|\b(?:see you|talk (?:to you )?(?:later|soon|tomorrow)|i'?m off (?:for|to)|gotta go)\b"
    r"|明天见|回头见|晚安|下次聊",
    re.IGNORECASE,
)


def details(text: str) -> int:
    """How many particulars (numbers, dates, names) a sentence names."""
    if cjk_count(text):
        return len(_PARTICULAR_ZH.findall(text))
    return len(_PARTICULAR.findall(re.sub(r"\bI\b", "i", text)))


# --- what the assistant says about the user's work -----------------------------------------

_EXT = (
    r"py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh"
    r"|ps1|yml|yaml|toml|json|ini|cfg|conf|md|sql|html|css|scss|lock|xml|env|proto|lua|vue"
    r"|gradle|tf|plist|csv|log|txt"
)
_LATIN_NAME = re.compile(r"[A-Za-z]{2,}")
# Names of the user's code, files, commands or settings.
_WORK = re.compile(
    r"`[^`\n]+`"
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.-]+/[\w./-]*"
    rf"|\b[\w-]+\.(?:{_EXT})\b"
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"
    r"|\b\w+\(\)|\b\w+\.\w+\("
    r"|(?<![\w-])--[a-z][\w-]+"
    r"|\b[a-z_]\w*=\S"
)


def asks(text: str) -> bool:
    """Whether a sentence asks something of the assistant: a request or a question."""
    return bool(_REQUEST.search(text) or _QUESTION.search(text))


def names_work(text: str) -> bool:
    """Whether a text names the user's code, files, commands or settings (a Latin-script
    name inside Chinese text counts)."""
    if _WORK.search(text):
        return True
    return cjk_count(text) > 0 and bool(_LATIN_NAME.search(text))


# --- the verdict -----------------------------------------------------------------------------


class Worth(NamedTuple):
    """A sentence worth a card: the card's kind, and how it may be used."""

    kind: str
    vouched: bool  # a cue, not only the classifier's confidence, says it is worth keeping
    leads: bool = True  # False: it only goes with a card that another sentence starts
    alone: bool = True  # False: a card only with a sentence that explains or fixes it


def _substantial(text: str, words: int = 3) -> bool:
    return cjk_count(text) >= 6 or len(content_words(text)) >= words


# What the assistant's turn answers (`answering`), from the user's turn before it:
FAULT = "fault"  # a fault or pitfall reported, or a decision: the reply explains or fixes it
WHERE = "where"  # where the project's things are: the reply is a fact about the project
GENERAL = "general"  # how to do something, or how two things differ: general knowledge
TOLD = "told"  # a rule: the reply carries it out

_ASKS_WHERE = re.compile(
    r"\bwhere (?:is|are|do|does|did|should|can|would)\b|在哪|哪里|哪儿|放哪", re.I
)
_ASKS_HOW = re.compile(
    r"\bhow (?:do|can|should|would|to)\b|\bwhat'?s the difference\b|\bdifference between\b"
    r"|\bwhich (?:one|is|should|would)\b|\bwhen (?:would|should) (?:i|we)\b"
    r"|有啥区别|有什么区别|什么区别|区别是|哪个更|怎么(?:处理|写|做|用|办|选)|如何|是什么意思",
    re.IGNORECASE,
)
# A measured result: a number with a unit of time, size or share ("it's 3.2 s", "降到 52 秒").
_MEASURED = re.compile(
    r"(?<![\w.])\d(?:[\d.,]*\d)?\s*(?:ms|s|sec|seconds?|min|minutes?|h|hours?|[KMGT]i?B|%|x)"
    r"(?![\w/])"
    r"|\d\s*(?:毫秒|秒|分钟|小时|倍)|\b\d+m\d+s\b",
)
# A sentence that gives the reason for the one before it ("they contain home addresses",
# "adding a column broke the build", "太慢", "否则会把 MySQL 查爆").
_REASON = re.compile(
    r"^(?:because|since|so|otherwise|or else|that'?s why|it|they|this|that)\b"
    r"|^(?:因为|否则|不然|要不然|太|会|这样|毕竟)",
    re.IGNORECASE,
)


def answering(text: str, kinds: set[str]) -> str:
    """What an assistant's reply to this user turn answers, given the kinds of the cards the
    turn gave (see FAULT, WHERE, GENERAL, TOLD; "" for anything else)."""
    if "conclusion" in kinds:
        return FAULT
    if _ASKS_WHERE.search(text):
        return WHERE
    if _ASKS_HOW.search(text) and re.search(r"[?？]|吗|啥", text):
        return GENERAL
    if "pref" in kinds:
        return TOLD
    return ""


def explains(text: str) -> bool:
    """Whether a sentence gives a reason or a consequence (of the rule said before it); a
    question never does."""
    text = text.strip()
    if _QUESTION.search(text):
        return False
    return bool(_REASON.search(text) or _CAUSE.search(text) or _FAULT.search(text))


def kind_of(text: str, role: str, kind: str, answering: str = "") -> Worth | None:
    """The card kind of one classified sentence said by `role` (the assistant answering
    what `answering` says), or None when it makes no card."""
    text = text.strip()
    if _QUESTION.search(text) or not _substantial(text, 2):
        return None
    return _user(text, kind) if role == "user" else _assistant(text, kind, answering)


def _assistant(text: str, kind: str, answering: str = "") -> Worth | None:
    """What the assistant says counts only about the user's own work: a sentence that names
    it or says why something happened (general knowledge is not worth a card). Explaining a
    fault the user reported, it is the cause or the fix; answering where something is, a
    fact; carrying out what the user said, only a result it measured is new."""
    work, cause = names_work(text), bool(_CAUSE.search(text))
    measured = answering in (FAULT, TOLD) and bool(_MEASURED.search(text))
    if answering == GENERAL or not (work or cause or measured) or not _substantial(text):
        return None
    if _NEXT.search(text) or _ACK.match(text):
        return None  # what it will do next, or what the user said taken up again
    if _PROPOSE.search(text):
        return Worth("conclusion", True, alone=False)  # a decision once the user takes it
    if answering == FAULT:
        return Worth("conclusion", True)
    if answering == WHERE and work:
        return Worth("fact", True)
    if _PITFALL.search(text) or measured:
        return Worth("conclusion", True)
    if answering == TOLD:
        return None
    if work and cause:
        return Worth("conclusion", True)
    if kind == "skill" and _STEPS.search(text):
        return Worth("skill", False)  # a procedure
    if _REPORT.match(text) or _ADVICE.search(text):
        return None
    if _DID.search(text):
        return Worth("conclusion", False, leads=False)
    if kind not in ("skill", "conclusion"):
        return None  # an assistant repeating a preference or a goal adds nothing
    return Worth("conclusion", False)


def _user(text: str, kind: str) -> Worth | None:
    goal = kind == "mission" and _GOAL.search(text) and not _REMIND.search(text)
    if _RULE.search(text) and not goal:
        return Worth("pref", True)
    if _DECIDE.search(text) or _PITFALL.search(text):
        return Worth("conclusion", True)
    if _REQUEST.search(text):
        return None
    if _SOFTWARE_FAULT.search(text) or _FAULT.search(text) and names_work(text):
        return Worth("conclusion", True, alone=False)
    if _WHERE.search(text) and names_work(text):
        return Worth("fact", True)
    if (
        _GOAL.search(text)
        and (kind == "mission" or _PLAN.search(text))
        and not _NOT_GOAL.search(text)
    ):
        return Worth("mission", True)
    if kind == "pref" and _LIKES.search(text) and not _REACTION.search(text):
        return Worth("pref", True)
    told = bool(_SELF.search(text)) and not _MUSING.search(text)  # the user, of themselves
    if kind == "conclusion" and _CAUSE.search(text) and (names_work(text) or not told):
        return Worth("conclusion", False)  # a finding about the work, not a life event
    if not told:
        return None
    if details(text):
        return Worth("pers", True)
    return Worth("pers", False) if kind == "pers" else None
